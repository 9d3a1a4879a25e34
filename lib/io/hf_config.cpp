#include "io/hf_config.h"

#include <cmath>

#include "core/error.h"
#include "core/mapped_file.h"
#include "io/safetensors_json.h"

namespace inlay {
namespace {

constexpr int kMaxDepth = 16;  // config.json nests a few objects (rope_scaling, quantization_config, ...)
constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int64_t kMaxVocab = int64_t{1} << 30;

// Typed access to config.json's keys, naming the file and key in every error.
class Reader {
public:
    Reader(const Json& root, const std::string& origin) : root_(root), origin_(origin) {}

    // The value of `key` in `obj` (root when null), or nullptr when absent or null.
    [[nodiscard]] const Json* get(std::string_view key, const Json* obj = nullptr) const {
        const Json& o = obj ? *obj : root_;
        const auto it = o.find(std::string(key));
        return it == o.end() || it->is_null() ? nullptr : &*it;
    }

    [[nodiscard]] std::optional<int64_t> int_opt(std::string_view key, int64_t lo, int64_t hi,
                                                 const Json* obj = nullptr) const {
        const Json* v = get(key, obj);
        if (!v) return std::nullopt;
        const auto i = json_int(*v);
        if (!i) bad("\"{}\" is a {} ({}), not an integer", key, json_type_name(*v), v->dump().substr(0, 40));
        if (*i < lo || *i > hi) bad("\"{}\" = {} is outside [{}, {}]", key, *i, lo, hi);
        return i;
    }
    [[nodiscard]] int64_t int_req(std::string_view key, int64_t lo, int64_t hi) const {
        const auto v = int_opt(key, lo, hi);
        if (!v) fail(INLAY_ERR_MISSING, "'{}': \"{}\" is missing", origin_, key);
        return *v;
    }
    [[nodiscard]] std::optional<double> number_opt(std::string_view key, const Json* obj = nullptr) const {
        const Json* v = get(key, obj);
        if (!v) return std::nullopt;
        const auto d = json_number(*v);
        if (!d || !std::isfinite(*d)) bad("\"{}\" is a {}, not a number", key, json_type_name(*v));
        return d;
    }
    [[nodiscard]] std::optional<bool> bool_opt(std::string_view key) const {
        const Json* v = get(key);
        if (!v) return std::nullopt;
        if (!v->is_boolean()) bad("\"{}\" is a {}, not a boolean", key, json_type_name(*v));
        return v->get<bool>();
    }
    [[nodiscard]] std::optional<std::string> string_opt(std::string_view key, const Json* obj = nullptr) const {
        const Json* v = get(key, obj);
        if (!v) return std::nullopt;
        if (!v->is_string()) bad("\"{}\" is a {}, not a string", key, json_type_name(*v));
        return v->get<std::string>();
    }

    template <class... Args>
    [[noreturn]] void bad(fmt::format_string<Args...> format, Args&&... args) const {
        fail(INLAY_ERR_BAD_FORMAT, "'{}': {}", origin_, fmt::format(format, std::forward<Args>(args)...));
    }
    template <class... Args>
    [[noreturn]] void unsupported(fmt::format_string<Args...> format, Args&&... args) const {
        fail(INLAY_ERR_UNSUPPORTED, "'{}': {}", origin_, fmt::format(format, std::forward<Args>(args)...));
    }

private:
    const Json& root_;
    const std::string& origin_;
};

std::string model_type_of_architecture(std::string_view arch) {
    if (arch == "LlamaForCausalLM") return "llama";
    if (arch == "Qwen3ForCausalLM") return "qwen3";
    return "";
}

std::optional<HfRopeScaling> read_rope_scaling(const Reader& r, const Json& obj, std::string_view where) {
    if (!obj.is_object()) r.bad("\"{}\" is a {}, not an object", where, json_type_name(obj));
    // transformers writes "rope_type" (older files: "type").
    auto type = r.string_opt("rope_type", &obj);
    if (!type) type = r.string_opt("type", &obj);
    if (!type) r.bad("\"{}\" has no \"rope_type\"", where);
    if (*type == "default") return std::nullopt;
    if (*type != "linear" && *type != "llama3")
        r.unsupported("{} type \"{}\" is not supported (linear, llama3)", where, *type);
    HfRopeScaling s;
    s.type = *type;
    const auto factor = r.number_opt("factor", &obj);
    if (!factor) r.bad("\"{}\" has no \"factor\"", where);
    if (!(*factor >= 1.0 && *factor <= 1e6)) r.bad("{} factor {} is outside [1, 1e6]", where, *factor);
    s.factor = *factor;
    if (s.type == "llama3") {
        s.low_freq_factor = r.number_opt("low_freq_factor", &obj).value_or(s.low_freq_factor);
        s.high_freq_factor = r.number_opt("high_freq_factor", &obj).value_or(s.high_freq_factor);
        s.original_max_position_embeddings =
            r.int_opt("original_max_position_embeddings", 1, int64_t{1} << 24, &obj).value_or(8192);
        if (!(s.low_freq_factor > 0.0 && s.high_freq_factor > s.low_freq_factor))
            r.bad("{}: llama3 needs 0 < low_freq_factor ({}) < high_freq_factor ({})", where, s.low_freq_factor,
                  s.high_freq_factor);
    }
    return s;
}

}  // namespace

HfConfig parse_hf_config(std::string_view json_text, const std::string& origin) {
    const Json root = parse_untrusted_json(json_text, origin, kMaxDepth);
    if (!root.is_object()) fail(INLAY_ERR_BAD_FORMAT, "'{}': not a JSON object", origin);
    const Reader r(root, origin);
    HfConfig c;
    c.origin = origin;

    if (const Json* archs = r.get("architectures")) {
        if (!archs->is_array()) r.bad("\"architectures\" is a {}, not an array", json_type_name(*archs));
        for (const auto& a : *archs) {
            if (!a.is_string()) r.bad("\"architectures\" holds a {}, not a string", json_type_name(a));
            c.architectures.push_back(a.get<std::string>());
        }
    }
    if (auto type = r.string_opt("model_type")) {
        c.model_type = *type;
    } else if (!c.architectures.empty()) {
        c.model_type = model_type_of_architecture(c.architectures.front());
        if (c.model_type.empty())
            r.unsupported("architecture \"{}\" is not supported (LlamaForCausalLM, Qwen3ForCausalLM)",
                          c.architectures.front());
    } else {
        fail(INLAY_ERR_MISSING, "'{}': \"model_type\" is missing (and no \"architectures\")", origin);
    }
    const bool qwen3 = c.model_type == "qwen3";
    if (c.model_type != "llama" && !qwen3)
        r.unsupported("model_type \"{}\" is not supported (llama, qwen3)", c.model_type.substr(0, 64));

    c.vocab_size = r.int_req("vocab_size", 1, kMaxVocab);
    c.hidden_size = r.int_req("hidden_size", 1, kMaxDim);
    c.intermediate_size = r.int_req("intermediate_size", 1, kMaxDim);
    c.num_hidden_layers = r.int_req("num_hidden_layers", 1, 4096);
    c.num_attention_heads = r.int_req("num_attention_heads", 1, 16384);
    c.num_key_value_heads = r.int_opt("num_key_value_heads", 1, 16384).value_or(c.num_attention_heads);
    if (c.num_attention_heads % c.num_key_value_heads != 0)
        r.bad("\"num_attention_heads\" = {} is not a multiple of \"num_key_value_heads\" = {}", c.num_attention_heads,
              c.num_key_value_heads);
    if (auto hd = r.int_opt("head_dim", 2, 65536)) {
        c.head_dim = *hd;
    } else {
        if (c.hidden_size % c.num_attention_heads != 0)
            r.bad("\"hidden_size\" = {} is not a multiple of \"num_attention_heads\" = {} (and no \"head_dim\")",
                  c.hidden_size, c.num_attention_heads);
        c.head_dim = c.hidden_size / c.num_attention_heads;
    }
    if (c.head_dim % 2 != 0) r.bad("the head dimension {} is odd (RoPE rotates pairs)", c.head_dim);
    c.max_position_embeddings =
        r.int_opt("max_position_embeddings", 1, int64_t{1} << 24).value_or(qwen3 ? 32768 : 2048);

    c.rms_norm_eps = r.number_opt("rms_norm_eps").value_or(1e-6);
    if (!(c.rms_norm_eps > 0.0 && c.rms_norm_eps < 1.0))
        r.bad("\"rms_norm_eps\" = {} is outside (0, 1)", c.rms_norm_eps);

    // Newer transformers nest RoPE settings in "rope_parameters".
    const Json* rope_params = r.get("rope_parameters");
    auto theta = r.number_opt("rope_theta");
    if (!theta && rope_params && rope_params->is_object()) theta = r.number_opt("rope_theta", rope_params);
    c.rope_theta = theta.value_or(10000.0);
    if (!(c.rope_theta > 0.0)) r.bad("\"rope_theta\" = {} must be positive", c.rope_theta);
    if (const Json* scaling = r.get("rope_scaling"))
        c.rope_scaling = read_rope_scaling(r, *scaling, "rope_scaling");
    else if (rope_params)
        c.rope_scaling = read_rope_scaling(r, *rope_params, "rope_parameters");
    if (auto partial = r.number_opt("partial_rotary_factor"); partial && *partial != 1.0)
        r.unsupported("\"partial_rotary_factor\" = {} is not supported (only 1)", *partial);

    c.tie_word_embeddings = r.bool_opt("tie_word_embeddings").value_or(false);
    if (auto act = r.string_opt("hidden_act"); act && *act != "silu")
        r.unsupported("\"hidden_act\" = \"{}\" is not supported (silu)", act->substr(0, 32));
    if (r.bool_opt("attention_bias").value_or(false)) r.unsupported("\"attention_bias\" = true is not supported");
    if (r.bool_opt("mlp_bias").value_or(false)) r.unsupported("\"mlp_bias\" = true is not supported");
    if (r.bool_opt("use_sliding_window").value_or(false))
        r.unsupported("\"use_sliding_window\" = true is not supported");

    c.bos_token_id = r.int_opt("bos_token_id", 0, c.vocab_size - 1);
    c.pad_token_id = r.int_opt("pad_token_id", 0, c.vocab_size - 1);
    if (const Json* eos = r.get("eos_token_id")) {
        if (eos->is_array()) {
            for (const auto& e : *eos) {
                const auto id = json_int(e);
                if (!id || *id < 0 || *id >= c.vocab_size)
                    r.bad("\"eos_token_id\" holds {}, not a token id below vocab_size {}", e.dump().substr(0, 40),
                          c.vocab_size);
                c.eos_token_ids.push_back(*id);
            }
        } else {
            c.eos_token_ids.push_back(*r.int_opt("eos_token_id", 0, c.vocab_size - 1));
        }
    }
    c.torch_dtype = r.string_opt("torch_dtype").value_or(r.string_opt("dtype").value_or(""));
    return c;
}

HfConfig read_hf_config(const std::string& path) {
    const MappedFile f(path);
    return parse_hf_config({reinterpret_cast<const char*>(f.data()), f.size()}, path);
}

}  // namespace inlay
