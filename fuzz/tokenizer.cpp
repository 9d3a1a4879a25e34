// Fuzz target: the tokenizers, encode and decode of arbitrary bytes on every vocabulary
// kind inlay has: SentencePiece-style BPE from GGUF (model "llama"), byte-level BPE from
// GGUF (model "gpt2", with the gpt-2, llama-bpe and qwen2 pre-tokenizers), Hugging Face
// tokenizer.json (PCRE2 split patterns, NFC) and SentencePiece tokenizer.model files.
//
// Vocabularies: built-in ones from tests/support (make_tiny_llama's SPM vocabulary, the
// tiny byte-level tokenizer.json with Qwen2's and Llama 3's regexes, and the same as
// GGUF "gpt2" metadata), plus the files named by INLAY_FUZZ_TOKENIZERS ('|'-separated,
// read once at start; scripts/fuzz.sh and ctest pass the repository's default model and
// shared/testdata's): a .gguf (its tokenizer.ggml.* keys), a .model (sentencepiece), a
// folder (tokenizer_from_folder), or "gguf-bpe:PRE:FILE" (a tokenizer.json turned into
// GGUF "gpt2" metadata with pre-tokenizer PRE). An absent file is reported and left out;
// with INLAY_TEST_NO_SKIP=1 it is a failure.
//
// Input: byte 0 picks the vocabulary, byte 1 the flags (parse_special, render_special,
// at_start), the rest is the text to encode and, read as 3-byte ids, the ids to decode.
// Oracle (besides the sanitizers): valid UTF-8 always encodes, invalid UTF-8 gives
// INLAY_ERR_INVALID_UTF8, every id encode returns is in the vocabulary, a streaming
// decode is valid UTF-8 and equals the sanitized whole decode, and out-of-range ids give
// INLAY_ERR_INVALID_TOKEN.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/utf8.h"
#include "fuzz_support.h"
#include "support/gguf_fixtures.h"
#include "io/gguf_reader.h"
#include "io/metadata.h"
#include "support/safetensors_fixtures.h"
#include "support/test_paths.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace inlay::fuzz {
namespace {

struct Vocab {
    std::string name;
    std::unique_ptr<Tokenizer> tok;
};
std::vector<Vocab> g_vocabs;

MetadataValue strings(std::vector<std::string> v) {
    MetadataArray a;
    a.elem_type = ValueType::STRING;
    a.strings = std::move(v);
    return MetadataValue::from_array(std::move(a));
}

// GGUF "gpt2" tokenizer metadata for a byte-level tokenizer.json (tokens by id, added
// tokens control when special, else user-defined; holes become unused "[PADn]").
Metadata bpe_gguf_metadata(const std::string& json_text, const std::string& pre) {
    const auto j = nlohmann::json::parse(json_text);
    std::vector<std::string> tokens;
    std::vector<int64_t> types;
    auto put = [&](size_t id, std::string text, int64_t type) {
        if (id >= tokens.size()) {
            tokens.resize(id + 1);
            types.resize(id + 1, 5);
        }
        tokens[id] = std::move(text);
        types[id] = type;
    };
    for (const auto& [text, id] : j.at("model").at("vocab").items()) put(id.get<size_t>(), text, 1);
    for (const auto& t : j.at("added_tokens"))
        put(t.at("id").get<size_t>(), t.at("content").get<std::string>(), t.value("special", false) ? 3 : 4);
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i].empty()) tokens[i] = "[PAD" + std::to_string(i) + "]";
    std::vector<std::string> merges;
    for (const auto& m : j.at("model").at("merges"))
        merges.push_back(m.is_string() ? m.get<std::string>()
                                       : m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());
    MetadataArray type_array;
    type_array.elem_type = ValueType::I32;
    type_array.ints = std::move(types);
    Metadata md;
    md.add("tokenizer.ggml.model", MetadataValue::from_string("gpt2"));
    md.add("tokenizer.ggml.pre", MetadataValue::from_string(pre));
    md.add("tokenizer.ggml.tokens", strings(std::move(tokens)));
    md.add("tokenizer.ggml.token_type", MetadataValue::from_array(std::move(type_array)));
    md.add("tokenizer.ggml.merges", strings(std::move(merges)));
    return md;
}

void add_builtin_vocabularies() {
    test::TinyLlamaOptions o;
    o.n_vocab = 400;
    o.n_embd = 32;
    o.n_layers = 1;
    o.n_ff = 32;
    const auto gguf = GgufFile::from_bytes(test::make_tiny_llama_gguf(o), "tiny-llama.gguf");
    g_vocabs.push_back({"builtin: tiny SPM (GGUF llama)", tokenizer_from_gguf(gguf->metadata())});
    for (const bool llama_regex : {false, true}) {
        int64_t n = 0;
        const std::string json = test::tiny_bpe_tokenizer_json(llama_regex, n);
        const std::string name = llama_regex ? "llama3 regex" : "qwen2 regex";
        g_vocabs.push_back({"builtin: tiny tokenizer.json, " + name, tokenizer_from_hf_json(json, {}, "tiny.json")});
        const std::string pre = llama_regex ? "llama-bpe" : "qwen2";
        g_vocabs.push_back({"builtin: tiny GGUF gpt2, pre " + pre, tokenizer_from_gguf(bpe_gguf_metadata(json, pre))});
    }
}

std::unique_ptr<Tokenizer> load(const std::string& spec) {
    namespace fs = std::filesystem;
    if (spec.rfind("gguf-bpe:", 0) == 0) {
        const size_t colon = spec.find(':', 9);
        const std::string pre = spec.substr(9, colon - 9);
        fs::path file = spec.substr(colon + 1);
        if (fs::is_directory(file)) file /= "tokenizer.json";
        if (!fs::exists(file)) return nullptr;
        return tokenizer_from_gguf(bpe_gguf_metadata(test::read_file(file), pre));
    }
    if (!fs::exists(spec)) return nullptr;
    if (fs::is_directory(spec)) return tokenizer_from_folder(spec);
    if (spec.size() > 5 && spec.ends_with(".gguf")) return tokenizer_from_gguf(GgufFile::open(spec)->metadata());
    return tokenizer_from_sentencepiece(spec);
}

}  // namespace

std::vector<Seed> seeds() {
    std::vector<std::string> texts = {
        "",
        "Hello world",
        " Hello  world\n\n\t",
        "<s>Hello</s> <|im_start|>user\nHi<|im_end|> <|endoftext|>",
        "The quick brown fox jumps over the lazy dog. 3.14159 1234567890",
        "caf\xC3\xA9 na\xC3\xAFve \xE2\x80\x94 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80 e\xCC\x81",  // accents, CJK, emoji
        "invalid \xFF\xC0\x80 and truncated \xE4\xBD",
        "   leading spaces and 'quotes' don't it's I'M",
    };
    // Every string of the llama.cpp reference vectors of tests/tokenizer (inputs only).
    const auto refs = nlohmann::json::parse(
        test::read_file(std::filesystem::path(INLAY_SOURCE_DIR) / "tests/tokenizer/data/llamacpp_tokenize_refs.json"));
    for (const auto& s : refs.at("strings")) texts.push_back(s.get<std::string>());
    std::vector<Seed> out;
    for (size_t i = 0; i < texts.size(); ++i) {
        for (int v = 0; v < 12; ++v) {
            if ((i + static_cast<size_t>(v)) % 4 != 0 && i >= 8) continue;  // a sample of pairs for the long list
            Seed s{"text-" + std::to_string(i) + "-vocab-" + std::to_string(v), ""};
            s.bytes.push_back(static_cast<char>(v));
            s.bytes.push_back(static_cast<char>((i * 5 + static_cast<size_t>(v)) % 8));
            s.bytes += texts[i];
            out.push_back(std::move(s));
        }
    }
    return out;
}

}  // namespace inlay::fuzz

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
    using namespace inlay::fuzz;
    add_builtin_vocabularies();
    const char* list = std::getenv("INLAY_FUZZ_TOKENIZERS");
    const char* no_skip = std::getenv("INLAY_TEST_NO_SKIP");
    bool missing = false;
    std::string rest = list ? list : "";
    while (!rest.empty()) {
        const size_t bar = rest.find('|');
        const std::string spec = rest.substr(0, bar);
        rest = bar == std::string::npos ? "" : rest.substr(bar + 1);
        if (spec.empty()) continue;
        std::unique_ptr<inlay::Tokenizer> tok;
        try {
            tok = load(spec);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "fuzz tokenizer: cannot load %s: %s\n", spec.c_str(), e.what());
            std::exit(1);
        }
        if (!tok) {
            std::fprintf(stderr, "SKIPPED vocabulary %s: absent (set INLAY_SHARED_DIR)\n", spec.c_str());
            missing = true;
            continue;
        }
        g_vocabs.push_back({spec, std::move(tok)});
    }
    if (missing && no_skip && std::string(no_skip) == "1") {
        std::fprintf(stderr, "fuzz tokenizer: INLAY_TEST_NO_SKIP=1 and a vocabulary is absent\n");
        std::exit(1);
    }
    std::fprintf(stderr, "fuzz tokenizer: %zu vocabularies\n", g_vocabs.size());
    for (const auto& v : g_vocabs)
        std::fprintf(stderr, "  %s (%d tokens)\n", v.name.c_str(), v.tok->n_vocab());
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace inlay;
    using fuzz::g_vocabs;
    if (size < 2 || g_vocabs.empty()) return 0;
    const auto& vocab = g_vocabs[data[0] % g_vocabs.size()];
    const Tokenizer& tok = *vocab.tok;
    const bool parse_special = data[1] & 1, render_special = data[1] & 2, at_start = data[1] & 4;
    const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
    const std::string where = "tokenizer " + vocab.name;

    std::vector<int32_t> ids;
    const inlay_status encoded = fuzz::expect_clean(where + ": encode", [&] { ids = tok.encode(text, parse_special); });
    const bool valid = utf8::find_invalid(text) == std::string_view::npos;
    if (valid && encoded != INLAY_OK) fuzz::finding(where, "valid UTF-8 did not encode");
    if (!valid && encoded != INLAY_ERR_INVALID_UTF8) fuzz::finding(where, "invalid UTF-8 did not give INVALID_UTF8");
    for (const int32_t id : ids)
        if (id < 0 || id >= tok.n_vocab()) fuzz::finding(where, "encode returned an id outside the vocabulary");

    // The text's bytes as ids (3 bytes each), a few of them out of range.
    const int64_t span = static_cast<int64_t>(tok.n_vocab()) + 8;
    for (size_t at = 0; at + 3 <= text.size(); at += 3) {
        const auto* p = reinterpret_cast<const uint8_t*>(text.data() + at);
        ids.push_back(static_cast<int32_t>((p[0] | p[1] << 8 | p[2] << 16) % span) - 4);
    }
    std::string whole;
    const inlay_status decoded =
        fuzz::expect_clean(where + ": decode", [&] { whole = tok.decode(ids, render_special, at_start); });
    bool any_invalid = false;
    for (const int32_t id : ids) any_invalid |= id < 0 || id >= tok.n_vocab();
    if (decoded != (any_invalid ? INLAY_ERR_INVALID_TOKEN : INLAY_OK))
        fuzz::finding(where, "decode status does not match the ids' validity");

    StreamingDetokenizer stream(tok, at_start, render_special);
    std::string streamed;
    for (const int32_t id : ids) {
        const inlay_status pushed = fuzz::expect_clean(where + ": stream", [&] { streamed += stream.push(id); });
        if ((pushed != INLAY_OK) != (id < 0 || id >= tok.n_vocab()))
            fuzz::finding(where, "streaming push status does not match the id's validity");
    }
    streamed += stream.flush();
    if (utf8::find_invalid(streamed) != std::string_view::npos) fuzz::finding(where, "streamed text is not valid UTF-8");
    if (!any_invalid && streamed != utf8::sanitize(whole))
        fuzz::finding(where, "streamed text differs from the sanitized whole decode");
    return 0;
}
