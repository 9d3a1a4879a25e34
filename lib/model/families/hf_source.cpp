#include "model/families/hf_source.h"

#include <fmt/ranges.h>

#include <cstring>
#include <filesystem>
#include <unordered_set>

#include "core/error.h"
#include "core/log.h"
#include "model/families/hf_family.h"

namespace inlay {
namespace {

struct Wanted {
    std::string hf;              // HF name
    std::vector<int64_t> shape;  // safetensors order (outermost first)
    int64_t permute_heads = 0;   // > 0: Q/K rows to permute (that many heads)
};

// Every weight the config asks for, in GGUF file order.
std::vector<Wanted> wanted_tensors(const HfConfig& c, bool permute) {
    const int64_t E = c.hidden_size, V = c.vocab_size, F = c.intermediate_size, hd = c.head_dim;
    const int64_t q = c.num_attention_heads * hd, kv = c.num_key_value_heads * hd;
    const bool qwen3 = c.model_type == "qwen3";
    const bool permute_qk = permute && c.model_type == "llama";
    std::vector<Wanted> w;
    w.push_back({"model.embed_tokens.weight", {V, E}});
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
        const auto n = [&](const char* suffix) { return fmt::format("model.layers.{}.{}", l, suffix); };
        w.push_back({n("input_layernorm.weight"), {E}});
        w.push_back({n("self_attn.q_proj.weight"), {q, E}, permute_qk ? c.num_attention_heads : 0});
        w.push_back({n("self_attn.k_proj.weight"), {kv, E}, permute_qk ? c.num_key_value_heads : 0});
        w.push_back({n("self_attn.v_proj.weight"), {kv, E}});
        w.push_back({n("self_attn.o_proj.weight"), {E, q}});
        if (qwen3) {
            w.push_back({n("self_attn.q_norm.weight"), {hd}});
            w.push_back({n("self_attn.k_norm.weight"), {hd}});
        }
        w.push_back({n("post_attention_layernorm.weight"), {E}});
        w.push_back({n("mlp.gate_proj.weight"), {F, E}});
        w.push_back({n("mlp.up_proj.weight"), {F, E}});
        w.push_back({n("mlp.down_proj.weight"), {E, F}});
    }
    w.push_back({"model.norm.weight", {E}});
    if (!c.tie_word_embeddings) w.push_back({"lm_head.weight", {V, E}});
    return w;
}

}  // namespace

std::unique_ptr<HfModelSource> HfModelSource::open(const std::string& folder, const HfSourceOptions& options) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) fail(INLAY_ERR_IO, "'{}' is not a folder", folder);
    const fs::path config_path = fs::path(folder) / "config.json";
    if (!fs::exists(config_path, ec)) fail(INLAY_ERR_MISSING, "'{}' has no config.json", folder);

    std::unique_ptr<HfModelSource> s(new HfModelSource());
    s->folder_ = folder;
    s->config_ = read_hf_config(config_path.string());
    const HfConfig& c = s->config_;
    s->spec_ = spec_from_hf_config(c, options.permute_qk);
    s->st_ = SafetensorsSource::open(folder);
    std::string name = fs::path(folder).lexically_normal().filename().string();
    if (name.empty()) name = fs::path(folder).lexically_normal().parent_path().filename().string();
    s->metadata_ = gguf_metadata_from_hf_config(c, name);

    std::unordered_set<std::string_view> used;
    const auto add_view = [&](TensorView v, std::string hf_name) {
        s->views_.push_back(std::move(v));
        s->hf_names_.push_back(std::move(hf_name));
    };
    for (const Wanted& w : wanted_tensors(c, options.permute_qk)) {
        const StTensor* entry = s->st_->find_entry(w.hf);
        if (!entry) {
            if (w.hf == "lm_head.weight")
                fail(INLAY_ERR_MISSING,
                     "tensor 'lm_head.weight' is missing from '{}' (and config.json does not set "
                     "tie_word_embeddings)",
                     folder);
            fail(INLAY_ERR_MISSING, "tensor '{}' is missing from '{}'", w.hf, folder);
        }
        if (!st_dtype_to_dtype(entry->dtype))
            fail(INLAY_ERR_UNSUPPORTED, "tensor '{}' in '{}' is {}; inlay reads F32, F16 and BF16 weights", w.hf,
                 folder, st_dtype_name(entry->dtype));
        if (entry->shape != w.shape)
            fail(INLAY_ERR_SHAPE_MISMATCH, "tensor '{}' in '{}' has shape [{}], but config.json implies [{}]", w.hf,
                 folder, fmt::join(entry->shape, ", "), fmt::join(w.shape, ", "));
        used.insert(entry->name);
        TensorView v = *s->st_->find(w.hf);  // present: a float tensor of 1 or 2 dims
        v.name = gguf_name_of_hf_tensor(w.hf);
        if (w.permute_heads > 0) {
            auto& rows = s->owned_.emplace_back(v.nbytes);
            permute_rows_for_normal_rope(v.data, rows.data(), w.permute_heads, c.head_dim, v.row_stride());
            v.data = rows.data();
        }
        add_view(std::move(v), w.hf);
        if (w.hf == "model.embed_tokens.weight" && c.rope_scaling && c.rope_scaling->type == "llama3") {
            // GGUF carries llama3 scaling as per-pair divisors; the decoder reads them here too.
            const auto factors = llama3_rope_freq_factors(*c.rope_scaling, c.rope_theta, c.head_dim);
            auto& bytes = s->owned_.emplace_back(factors.size() * sizeof(float));
            std::memcpy(bytes.data(), factors.data(), bytes.size());
            TensorView f;
            f.name = "rope_freqs.weight";
            f.type = DType::F32;
            f.n_dims = 1;
            f.ne = {static_cast<int64_t>(factors.size()), 1, 1, 1};
            f.data = bytes.data();
            f.nbytes = bytes.size();
            add_view(std::move(f), "");
        }
    }

    std::vector<std::string_view> unused;
    for (const StTensor* t : s->st_->entries()) {
        if (used.contains(t->name) || t->name.ends_with("rotary_emb.inv_freq")) continue;
        if (t->name == "lm_head.weight" && c.tie_word_embeddings) continue;  // a saved copy of the tied embedding
        unused.push_back(t->name);
    }
    if (!unused.empty())
        log(LogLevel::warn, "'{}': {} tensor(s) not used by a {} model: {}{}", folder, unused.size(), c.model_type,
            fmt::join(unused.begin(), unused.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(unused.size(), 4)),
                      ", "),
            unused.size() > 4 ? ", ..." : "");
    s->build_index();
    return s;
}

}  // namespace inlay
