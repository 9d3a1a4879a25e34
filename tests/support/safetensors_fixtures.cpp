#include "support/safetensors_fixtures.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "io/safetensors_writer.h"
#include "support/gguf_fixtures.h"
#include "support/test_paths.h"

namespace inlay::test {
namespace {

using OJson = nlohmann::ordered_json;

// splitmix64: a portable, seeded stream of uniform values in [-1, 1).
class Random {
public:
    explicit Random(uint64_t seed) : state_(seed) {}
    double uniform() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        return static_cast<double>(z >> 11) / static_cast<double>(1ULL << 52) - 1.0;
    }

private:
    uint64_t state_;
};

// GPT-2's byte-to-unicode table: printable bytes map to themselves, the rest to 256+.
std::string byte_symbol(int b) {
    int cp = b;
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
        int n = 0;
        for (int x = 0; x < b; ++x)
            if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) ++n;
        cp = 256 + n;
    }
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else {
        s += static_cast<char>(0xc0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3f));
    }
    return s;
}

void write_text(const std::filesystem::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out) throw std::runtime_error("cannot write " + p.string());
}

// Reads a protobuf varint at `pos`.
uint64_t varint(const std::string& s, size_t& pos) {
    uint64_t v = 0;
    for (int shift = 0; pos < s.size() && shift < 64; shift += 7) {
        const auto b = static_cast<unsigned char>(s[pos++]);
        v |= static_cast<uint64_t>(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    throw std::runtime_error("bad protobuf varint");
}

}  // namespace

std::filesystem::path spm_source() {
    return testdata("tokenizers/llama2-tokenizer.model");
}

std::vector<std::byte> truncated_spm_model(const std::filesystem::path& source, int n_pieces) {
    const std::string in = inlay::test::read_file(source);
    std::string out;
    int pieces = 0;
    for (size_t pos = 0; pos < in.size();) {
        const size_t start = pos;
        const uint64_t tag = varint(in, pos);
        const uint64_t wire = tag & 7;
        if (wire == 2) {
            const uint64_t len = varint(in, pos);
            pos += static_cast<size_t>(len);
        } else if (wire == 0) {
            (void)varint(in, pos);
        } else if (wire == 5) {
            pos += 4;
        } else if (wire == 1) {
            pos += 8;
        } else {
            throw std::runtime_error("unexpected protobuf wire type");
        }
        if (pos > in.size()) throw std::runtime_error("truncated protobuf");
        if ((tag >> 3) == 1 && pieces++ >= n_pieces) continue;  // ModelProto.pieces
        out.append(in, start, pos - start);
    }
    std::vector<std::byte> bytes(out.size());
    std::memcpy(bytes.data(), out.data(), out.size());
    return bytes;
}

std::string tiny_bpe_tokenizer_json(bool llama_regex, int64_t& n_tokens) {
    OJson vocab = OJson::object();
    std::vector<std::string> texts;
    for (int b = 0; b < 256; ++b) texts.push_back(byte_symbol(b));
    OJson merges = OJson::array();
    // Pairs merged in this order (earlier = higher priority); "Ġ" is the space symbol.
    const std::vector<std::pair<std::string, std::string>> pairs = {
        {"t", "h"},  {"Ġ", "t"},   {"h", "e"}, {"Ġt", "he"}, {"i", "n"},  {"Ġ", "a"}, {"e", "r"},  {"o", "n"},
        {"r", "e"},  {"a", "n"},   {"Ġ", "s"}, {"Ġ", "w"},   {"e", "n"},  {"o", "u"}, {"Ġ", "o"},  {"Ġ", "c"},
        {"i", "s"},  {"Ġ", "b"},   {"a", "t"}, {"Ġ", "f"},   {"in", "g"}, {"e", "d"}, {"Ġ", "h"},  {"o", "r"},
        {"Ġ", "i"},  {"Ġ", "m"},   {"Ġ", "d"}, {"a", "r"},   {"l", "l"},  {"Ġ", "p"}, {"Ġa", "n"}, {"Ġan", "d"},
        {"o", "w"},  {"Ġ", "l"},   {"Ġ", "u"}, {"Ġo", "n"},  {"Ġ", "e"},  {"Ġ", "g"}, {"Ġt", "o"}, {"Ġ", "n"},
        {"Ġw", "a"}, {"Ġwa", "s"}, {"Ġ", "y"}, {"Ġy", "ou"}, {"Ġ", "r"},  {"s", "t"}, {"Ġ", "1"},  {"Ġ", "2"},
    };
    for (const auto& [a, b] : pairs) {
        merges.push_back(OJson::array({a, b}));
        texts.push_back(a + b);
    }
    for (size_t i = 0; i < texts.size(); ++i) vocab[texts[i]] = i;
    OJson added = OJson::array();
    for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
        added.push_back({{"id", texts.size()},
                         {"content", special},
                         {"single_word", false},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"special", true}});
        texts.push_back(special);
    }
    n_tokens = static_cast<int64_t>(texts.size());
    const char* regex =
        llama_regex ? R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*)"
                      R"(|\s*[\r\n]+|\s+(?!\S)|\s+)"
                    : R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*)"
                      R"(|\s*[\r\n]+|\s+(?!\S)|\s+)";
    const OJson tok = {
        {"version", "1.0"},
        {"added_tokens", added},
        {"normalizer", nullptr},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}}},
        {"decoder", {{"type", "ByteLevel"}}},
        {"model",
         {{"type", "BPE"},
          {"byte_fallback", false},
          {"ignore_merges", llama_regex},
          {"vocab", vocab},
          {"merges", merges}}},
    };
    return tok.dump(1);
}

TinyHfModel write_tiny_hf_folder(const std::filesystem::path& folder, const TinyHfOptions& o) {
    std::filesystem::create_directories(folder);
    TinyHfModel m;
    m.options = o;
    m.head_dim = o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_heads;
    const bool qwen3 = o.arch == "qwen3";

    // Tokenizer files first: they fix the vocabulary size.
    OJson tok_config = OJson::object();
    if (o.tokenizer == TinyTokenizer::spm) {
        if (!std::filesystem::exists(spm_source())) throw std::runtime_error(spm_source().string() + " is absent");
        const auto bytes = truncated_spm_model(spm_source(), 512);
        write_text(folder / "tokenizer.model", std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
        m.n_vocab = 512;
        tok_config = {{"add_bos_token", true}, {"add_eos_token", false}, {"bos_token", "<s>"}, {"eos_token", "</s>"}};
    } else {
        write_text(folder / "tokenizer.json", tiny_bpe_tokenizer_json(!qwen3, m.n_vocab));
        tok_config = {{"add_bos_token", false},
                      {"bos_token", nullptr},
                      {"eos_token", "<|im_end|>"},
                      {"pad_token", "<|endoftext|>"},
                      {"chat_template", "{{ messages }}"}};
    }
    write_text(folder / "tokenizer_config.json", tok_config.dump(2));

    OJson config = {
        {"architectures", {qwen3 ? "Qwen3ForCausalLM" : "LlamaForCausalLM"}},
        {"model_type", o.arch},
        {"hidden_size", o.n_embd},
        {"intermediate_size", o.n_ff},
        {"num_hidden_layers", o.n_layers},
        {"num_attention_heads", o.n_heads},
        {"num_key_value_heads", o.n_kv_heads},
        {"max_position_embeddings", o.context},
        {"rms_norm_eps", o.rms_eps},
        {"rope_theta", o.rope_theta},
        {"tie_word_embeddings", o.tied},
        {"vocab_size", m.n_vocab},
        {"hidden_act", "silu"},
        {"attention_bias", false},
        {"torch_dtype", o.dtype == StDType::F32   ? "float32"
                        : o.dtype == StDType::F16 ? "float16"
                                                  : "bfloat16"},
    };
    if (o.head_dim > 0) config["head_dim"] = o.head_dim;
    if (o.tokenizer == TinyTokenizer::spm) {
        config["bos_token_id"] = 1;
        config["eos_token_id"] = 2;
    } else {
        config["bos_token_id"] = m.n_vocab - 3;
        config["eos_token_id"] = m.n_vocab - 1;
    }
    if (!o.rope_scaling.empty()) config["rope_scaling"] = OJson::parse(o.rope_scaling);
    if (qwen3) config["use_sliding_window"] = false;
    m.config_json = config.dump(2);
    write_text(folder / "config.json", m.config_json);

    // Weights: uniform, scaled so activations stay O(1); norms around 1.
    Random rng(o.seed);
    SafetensorsWriter writer;
    writer.add_metadata("format", "pt");
    const DType dtype = *st_dtype_to_dtype(o.dtype);
    const auto tensor = [&](const std::string& name, std::vector<int64_t> shape, bool norm, double scale) {
        int64_t n = 1;
        for (const int64_t d : shape) n *= d;
        std::vector<float> values(static_cast<size_t>(n));
        for (auto& v : values) v = static_cast<float>(norm ? 1.0 + 0.2 * rng.uniform() : scale * rng.uniform());
        const auto bytes = encode_fixture_weights(dtype, values);
        // Keep the values as stored (after rounding to the dtype).
        for (size_t i = 0; i < values.size(); ++i) {
            if (dtype == DType::F16) {
                uint16_t h;
                std::memcpy(&h, bytes.data() + 2 * i, 2);
                const int e = (h >> 10) & 0x1f, mant = h & 0x3ff;
                const double mag = e == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, e - 25);
                values[i] = static_cast<float>((h & 0x8000) ? -mag : mag);
            } else if (dtype == DType::BF16) {
                uint32_t u = 0;
                std::memcpy(reinterpret_cast<char*>(&u) + 2, bytes.data() + 2 * i, 2);
                std::memcpy(&values[i], &u, 4);
            }
        }
        writer.add_tensor(name, o.dtype, shape, bytes);
        m.weights[name] = std::move(values);
    };
    const int64_t E = o.n_embd, hd = m.head_dim, q = o.n_heads * hd, kv = o.n_kv_heads * hd, F = o.n_ff;
    const auto in_scale = [](int64_t n_in) { return std::sqrt(3.0 / static_cast<double>(n_in)); };
    tensor("model.embed_tokens.weight", {m.n_vocab, E}, false, 1.0);
    for (int64_t l = 0; l < o.n_layers; ++l) {
        const auto n = [&](const char* s) { return fmt::format("model.layers.{}.{}", l, s); };
        tensor(n("input_layernorm.weight"), {E}, true, 0);
        tensor(n("self_attn.q_proj.weight"), {q, E}, false, in_scale(E));
        tensor(n("self_attn.k_proj.weight"), {kv, E}, false, in_scale(E));
        tensor(n("self_attn.v_proj.weight"), {kv, E}, false, in_scale(E));
        tensor(n("self_attn.o_proj.weight"), {E, q}, false, in_scale(q));
        if (qwen3) {
            tensor(n("self_attn.q_norm.weight"), {hd}, true, 0);
            tensor(n("self_attn.k_norm.weight"), {hd}, true, 0);
        }
        tensor(n("post_attention_layernorm.weight"), {E}, true, 0);
        tensor(n("mlp.gate_proj.weight"), {F, E}, false, in_scale(E));
        tensor(n("mlp.up_proj.weight"), {F, E}, false, in_scale(E));
        tensor(n("mlp.down_proj.weight"), {E, F}, false, in_scale(F));
    }
    tensor("model.norm.weight", {E}, true, 0);
    if (!o.tied) tensor("lm_head.weight", {m.n_vocab, E}, false, 3.0 * in_scale(E));
    if (o.max_shard_bytes > 0)
        writer.write_sharded(folder.string(), o.max_shard_bytes);
    else
        writer.write_file((folder / "model.safetensors").string());
    return m;
}

}  // namespace inlay::test
