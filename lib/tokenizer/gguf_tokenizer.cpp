// tokenizer_from_gguf: reads tokenizer.ggml.* with llama.cpp's defaults (llama-vocab.cpp
// llama_vocab::impl::load) and validates everything it uses.
#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/utf8.h"
#include "io/metadata.h"
#include "tokenizer/tokenizer_impls.h"

namespace inlay {

namespace {

constexpr std::string_view k_model = "tokenizer.ggml.model";
constexpr std::string_view k_pre = "tokenizer.ggml.pre";
constexpr std::string_view k_tokens = "tokenizer.ggml.tokens";
constexpr std::string_view k_scores = "tokenizer.ggml.scores";
constexpr std::string_view k_types = "tokenizer.ggml.token_type";
constexpr std::string_view k_merges = "tokenizer.ggml.merges";

// A special-token id key: absent -> `fallback`; -1 or u32 -1 -> none; otherwise it
// must name a token.
int32_t special_id(const Metadata& md, std::string_view key, int32_t fallback, int32_t n_tokens) {
    const std::optional<int64_t> v = md.get_int_opt(key);
    if (!v) return fallback < n_tokens ? fallback : -1;  // llama.cpp disables an out-of-range default
    if (*v == -1 || *v == 0xFFFFFFFFLL) return -1;
    if (*v < 0 || *v >= n_tokens) {
        fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' = {} is not a token id (vocabulary of {} tokens)", key, *v,
             n_tokens);
    }
    return static_cast<int32_t>(*v);
}

std::vector<float> read_scores(const Metadata& md, size_t n) {
    const MetadataArray* a = md.get_array_opt(k_scores);
    if (!a) return {};
    if (a->size() != n)
        fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' has {} entries for {} tokens", k_scores, a->size(), n);
    std::vector<float> scores(n);
    if (a->elem_type == ValueType::F32 || a->elem_type == ValueType::F64) {
        for (size_t i = 0; i < n; ++i) scores[i] = static_cast<float>(a->floats[i]);
    } else if (a->elem_type == ValueType::I32) {  // llama.cpp accepts integer scores
        for (size_t i = 0; i < n; ++i) scores[i] = static_cast<float>(a->ints[i]);
    } else {
        fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' is an array of {}, expected f32", k_scores,
             value_type_name(a->elem_type));
    }
    return scores;
}

std::vector<TokenType> read_types(const Metadata& md, size_t n) {
    const MetadataArray* a = md.get_array_opt(k_types);
    if (!a) return std::vector<TokenType>(n, TokenType::normal);  // llama.cpp's default
    if (!is_integer(a->elem_type)) {
        fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' is an array of {}, expected i32", k_types,
             value_type_name(a->elem_type));
    }
    if (a->size() != n)
        fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' has {} entries for {} tokens", k_types, a->size(), n);
    std::vector<TokenType> types(n);
    for (size_t i = 0; i < n; ++i) {
        const int64_t t = a->ints[i];
        if (t < 0 || t > 6)
            fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}': token {} has type {}, expected 0..6", k_types, i, t);
        types[i] = static_cast<TokenType>(t);
    }
    return types;
}

// Metadata::get_bool_opt (as of this writing) rejects values of GGUF type bool, so the
// flags are read here directly: bool, or any integer (0 = false).
std::optional<bool> flag(const Metadata& md, std::string_view key) {
    const MetadataValue* v = md.find(key);
    if (!v) return std::nullopt;
    if (v->type == ValueType::BOOL) return std::get<int64_t>(v->value) != 0;
    if (is_integer(v->type)) return md.get_int(key) != 0;
    fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' has type {}, expected bool", key, value_type_name(v->type));
}

struct PreInfo {
    PretokenizerKind kind;
    bool ignore_merges;
    bool add_bos;
};

PreInfo pretokenizer_for(const std::optional<std::string>& pre) {
    if (!pre || *pre == "default") return {PretokenizerKind::fallback, false, false};
    const std::string& p = *pre;
    if (p == "llama-bpe" || p == "llama3" || p == "llama-v3") return {PretokenizerKind::llama3, true, true};
    if (p == "qwen2" || p == "deepseek-r1-qwen") return {PretokenizerKind::qwen2, false, false};
    if (p == "gpt-2" || p == "phi-2") return {PretokenizerKind::gpt2, false, false};
    fail(INLAY_ERR_UNSUPPORTED,
         "pre-tokenizer {} ({}) is not supported (supported: default, gpt-2, llama-bpe, qwen2)", utf8::quoted(p, '\''),
         k_pre);
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const Metadata& md) {
    const std::string& model = md.get_string(k_model);
    const bool spm = model == "llama";
    if (!spm && model != "gpt2") {
        fail(INLAY_ERR_UNSUPPORTED, "tokenizer model {} ({}) is not supported (supported: llama, gpt2)", utf8::quoted(model, '\''),
             k_model);
    }

    auto vocab = std::make_unique<Vocabulary>();
    vocab->origin = fmt::format("GGUF vocabulary ({})", model);
    vocab->texts = md.get_string_array(k_tokens);
    const size_t n = vocab->texts.size();
    if (n == 0) fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' is empty: the vocabulary has no tokens", k_tokens);
    if (n > static_cast<size_t>(INT32_MAX))
        fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' has {} tokens: too many", k_tokens, n);
    const auto n_tok = static_cast<int32_t>(n);
    vocab->scores = read_scores(md, n);
    vocab->types = read_types(md, n);

    PreInfo pre{PretokenizerKind::fallback, false, false};
    if (!spm) pre = pretokenizer_for(md.get_string_opt(k_pre));

    vocab->bos = special_id(md, "tokenizer.ggml.bos_token_id", spm ? 1 : -1, n_tok);
    vocab->eos = special_id(md, "tokenizer.ggml.eos_token_id", spm ? 2 : -1, n_tok);
    vocab->unk = special_id(md, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1, n_tok);
    vocab->eot = special_id(md, "tokenizer.ggml.eot_token_id", -1, n_tok);
    vocab->eom = special_id(md, "tokenizer.ggml.eom_token_id", -1, n_tok);
    for (const std::string_view key :
         {"tokenizer.ggml.fim_pad_token_id", "tokenizer.ggml.fim_rep_token_id", "tokenizer.ggml.fim_sep_token_id"}) {
        if (const int32_t id = special_id(md, key, -1, n_tok); id >= 0) vocab->extra_eog.push_back(id);
    }
    vocab->add_bos = flag(md, "tokenizer.ggml.add_bos_token").value_or(spm ? true : pre.add_bos);
    vocab->add_eos = flag(md, "tokenizer.ggml.add_eos_token").value_or(false);
    vocab->add_space_prefix = flag(md, "tokenizer.ggml.add_space_prefix").value_or(spm);

    std::string name = md.get_string_opt("general.name").value_or("");
    std::transform(name.begin(), name.end(), name.begin(),
                   [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
    vocab->rstrip_specials = name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos;

    if (spm) return make_spm_tokenizer(std::move(vocab));
    return make_bpe_tokenizer(std::move(vocab), md.get_string_array(k_merges), pre.kind, pre.ignore_merges);
}

}  // namespace inlay
