#include "model/model.h"

#include <chrono>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "io/gguf_reader.h"
#include "model/families/family.h"
#include "model/families/hf_source.h"
#include "tokenizer/hf_tokenizer.h"

namespace inlay {
namespace {

// Touches every page of the weights so the model is resident when loading returns
// (not paged in during the first tokens), reporting progress as it goes.
void prefetch_weights(const WeightSource& weights, const ProgressFn& progress) {
    uint64_t total = 0, done = 0;
    for (const auto& t : weights.tensors()) total += t.nbytes;
    constexpr size_t kPage = 4096;
    volatile unsigned char sink = 0;
    float reported = -1.0f;
    for (const auto& t : weights.tensors()) {
        const auto* p = reinterpret_cast<const unsigned char*>(t.data);
        for (size_t off = 0; off < t.nbytes; off += kPage) {
            sink = static_cast<unsigned char>(sink + p[off]);
        }
        done += t.nbytes;
        const float f = total ? static_cast<float>(static_cast<double>(done) / static_cast<double>(total)) : 1.0f;
        if (progress && f - reported >= 0.01f) {
            reported = f;
            if (!progress(f * 0.95f)) fail(INLAY_ERR_CANCELLED, "model load aborted by the progress callback");
        }
    }
    (void)sink;
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& path, const ModelOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    if (options.context_length < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "context_length must not be negative");
    std::unique_ptr<Model> model(new Model());
    DecoderSpec spec;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        // A Hugging Face folder (config.json, safetensors, tokenizer files), seen as the
        // GGUF model it converts to; it checks every weight's presence, dtype and shape.
        auto hf = HfModelSource::open(path);
        spec = hf->spec();
        model->tokenizer_ = tokenizer_from_folder(path);
        model->weights_ = std::move(hf);
    } else {
        model->weights_ = GgufFile::open(path);
        const WeightSource& gguf = *model->weights_;
        spec = spec_from_gguf_metadata(gguf.metadata());
        const TensorView& embd = gguf.require("token_embd.weight");
        spec.n_vocab = embd.n_dims == 2 ? embd.ne[1] : 0;
        if (spec.n_vocab <= 0 || embd.ne[0] != spec.n_embd)
            fail(INLAY_ERR_SHAPE_MISMATCH, "tensor 'token_embd.weight' has shape [{}, {}], expected [{}, n_vocab]",
                 embd.ne[0], embd.ne[1], spec.n_embd);
        if (auto declared = gguf.metadata().get_int_opt(spec.architecture + ".vocab_size");
            declared && *declared != spec.n_vocab)
            fail(INLAY_ERR_SHAPE_MISMATCH, "{}.vocab_size = {} but token_embd.weight has {} rows", spec.architecture,
                 *declared, spec.n_vocab);
        model->tokenizer_ = tokenizer_from_gguf(gguf.metadata());
    }
    const WeightSource& w = *model->weights_;
    const Metadata& md = w.metadata();
    if (model->tokenizer_->n_vocab() != spec.n_vocab)
        fail(INLAY_ERR_SHAPE_MISMATCH, "the vocabulary has {} tokens but the token embedding token_embd.weight has {} rows",
             model->tokenizer_->n_vocab(), spec.n_vocab);

    if (options.progress && !options.progress(0.0f)) fail(INLAY_ERR_CANCELLED, "model load aborted by the progress callback");
    // The pages first, then the executor: a backend that repacks a matrix reads it once
    // from memory and may hand the stored pages back (CpuBackend's interleaved rows), which
    // a prefetch afterwards would undo.
    prefetch_weights(w, options.progress);
    model->executor_ = make_executor(
        DeviceRequest{options.device, options.device_index, options.n_threads, std::nullopt, std::nullopt}, spec, w);

    model->context_length_ = options.context_length > 0 ? options.context_length : spec.context_length;
    if (model->context_length_ > spec.context_length)
        log(LogLevel::warn, "context length {} exceeds the {} tokens '{}' was trained with", model->context_length_,
            spec.context_length, path);
    model->name_ = md.get_string_opt("general.name").value_or("");
    model->source_ = path;
    for (const auto& t : w.tensors()) model->n_params_ += t.n_elements();
    model->load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.progress && !options.progress(1.0f)) fail(INLAY_ERR_CANCELLED, "model load aborted by the progress callback");
    log(LogLevel::info, "loaded '{}': {} {} layers, {} embd, {} vocab, on {}, in {:.3f} s", path, spec.architecture,
        spec.n_layers, spec.n_embd, spec.n_vocab, model->device(), model->load_seconds_);
    return model;
}

}  // namespace inlay
