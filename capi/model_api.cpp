// C ABI: model loading, information, tokenization.
#include <cstddef>

#include "capi/capi_common.h"
#include "capi/handles.h"
#include "capi/text_calls.h"

using inlay::capi::guarded;
using inlay::capi::require_arg;
using inlay::capi::require_params;

extern "C" {

INLAY_API void inlay_model_params_init_size(inlay_model_params* params, size_t size) {
    inlay::capi::init_sized(params, size, [](inlay_model_params& p) {
        (void)p;
    });
}

// Init without a size: the symbol that programs compiled before *_init_size existed
// call. It writes the struct as ABI 1 froze it (docs/ABI.md), never more.
INLAY_API void(inlay_model_params_init)(inlay_model_params* params) {
    inlay_model_params_init_size(params, sizeof(inlay_model_params));
}

INLAY_API inlay_status inlay_model_load(const char* path, const inlay_model_params* params, inlay_model** out_model) {
    if (out_model) *out_model = nullptr;
    return guarded("inlay_model_load", [&] {
        require_arg(path != nullptr, "inlay_model_load", "path is NULL");
        require_arg(out_model != nullptr, "inlay_model_load", "out_model is NULL");
        const inlay_model_params p = inlay::capi::read_params(params, "inlay_model_load", "inlay_model_params");
        require_arg(p.n_threads >= 0 && p.n_threads <= 1024, "inlay_model_load", "n_threads must be in [0, 1024]");
        require_arg(p.context_length >= 0, "inlay_model_load", "context_length must not be negative");
        inlay::ModelOptions options;
        options.n_threads = p.n_threads;
        options.context_length = p.context_length;
        if (p.progress) {
            options.progress = [fn = p.progress, user = p.progress_user](float f) { return fn(f, user); };
        }
        require_arg(p.kv_budget_bytes >= 0, "inlay_model_load", "kv_budget_bytes must not be negative");
        if (p.kv_block_size < 0 || p.kv_block_size > 4096)
            inlay::fail(INLAY_ERR_INVALID_ARGUMENT, "inlay_model_load: kv_block_size is {}; it must be in [0, 4096]",
                        p.kv_block_size);
        if (p.batch_tokens < 0 || p.batch_tokens > 65536)
            inlay::fail(INLAY_ERR_INVALID_ARGUMENT, "inlay_model_load: batch_tokens is {}; it must be in [0, 65536]",
                        p.batch_tokens);
        require_arg(p.device >= INLAY_DEVICE_AUTO && p.device <= INLAY_DEVICE_CUDA, "inlay_model_load",
                    "device must be INLAY_DEVICE_AUTO, INLAY_DEVICE_CPU or INLAY_DEVICE_CUDA");
        require_arg(p.device_index >= 0 && p.device_index < 1024, "inlay_model_load", "device_index must be in [0, 1024)");
        require_arg(p.kv_memory_fraction >= 0.0 && p.kv_memory_fraction <= 1.0, "inlay_model_load",
                    "kv_memory_fraction must be in [0, 1]");
        options.device = p.device == INLAY_DEVICE_CPU    ? inlay::DeviceKind::cpu
                         : p.device == INLAY_DEVICE_CUDA ? inlay::DeviceKind::cuda
                                                         : inlay::DeviceKind::automatic;
        options.device_index = p.device_index;
        auto handle = std::make_unique<inlay_model>();
        handle->model = inlay::Model::load(path, options);
        handle->engine = inlay::capi::make_engine(handle->model, p);
        *out_model = handle.release();
    });
}

INLAY_API void inlay_model_free(inlay_model* model) { delete model; }

INLAY_API inlay_status inlay_model_get_info(const inlay_model* model, inlay_model_info* info) {
    return guarded("inlay_model_get_info", [&] {
        require_arg(model != nullptr, "inlay_model_get_info", "model is NULL");
        require_arg(info != nullptr, "inlay_model_get_info", "info is NULL");
        require_params(info, "inlay_model_get_info", "inlay_model_info");
        inlay_model_info out{};
        const inlay::Model& m = *model->model;
        const inlay::DecoderSpec& s = m.spec();
        out.struct_size = info->struct_size;
        out.architecture = s.architecture.c_str();
        out.name = m.name().c_str();
        out.n_params = m.n_params();
        out.file_bytes = static_cast<int64_t>(m.weights().file_bytes());
        out.n_vocab = static_cast<int32_t>(s.n_vocab);
        out.n_embd = static_cast<int32_t>(s.n_embd);
        out.n_layers = static_cast<int32_t>(s.n_layers);
        out.n_heads = static_cast<int32_t>(s.n_heads);
        out.n_kv_heads = static_cast<int32_t>(s.n_kv_heads);
        out.head_dim = static_cast<int32_t>(s.head_dim);
        out.n_ff = static_cast<int32_t>(s.n_ff);
        out.context_length = static_cast<int32_t>(m.context_length());
        out.train_context_length = static_cast<int32_t>(s.context_length);
        out.bos_token = m.tokenizer().bos();
        out.eos_token = m.tokenizer().eos();
        out.device = m.device().c_str();
        // Older callers may pass a shorter struct: copy only what they have room for.
        inlay::capi::write_out(info, out);
    });
}

INLAY_API inlay_status inlay_tokenize(const inlay_model* model, const char* text, size_t len, uint32_t flags,
                                      int32_t* out, size_t capacity, size_t* n_tokens) {
    return guarded("inlay_tokenize", [&] {
        require_arg(model != nullptr, "inlay_tokenize", "model is NULL");
        inlay::capi::tokenize_call("inlay_tokenize", model->model->tokenizer(), text, len, flags, out, capacity,
                                   n_tokens);
    });
}

INLAY_API inlay_status inlay_detokenize(const inlay_model* model, const int32_t* tokens, size_t n,
                                        bool render_special, char* out, size_t capacity, size_t* length) {
    return guarded("inlay_detokenize", [&] {
        require_arg(model != nullptr, "inlay_detokenize", "model is NULL");
        inlay::capi::detokenize_call("inlay_detokenize", model->model->tokenizer(), tokens, n, render_special, out,
                                     capacity, length);
    });
}

}  // extern "C"
