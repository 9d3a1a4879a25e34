// The shared GGUF fixtures: the tiny llama is a valid, deterministic model, and the
// fixture encoders agree with the formats.md block definitions (float64 decode) and,
// byte for byte with llama.cpp's quantizer (tools/llamacpp's llamacpp-quantize).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/half.h"
#include "io/gguf_reader.h"
#include "support/gguf_fixtures.h"
#include "support/llamacpp.h"
#include "support/test_paths.h"

using namespace inlay;
using namespace inlay::test;
namespace fs = std::filesystem;

namespace {

double f16_at(const std::byte* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return static_cast<double>(f16_to_f32_portable(h));
}

// Decodes `n` values of a fixture type by the formats.md definitions, in float64.
std::vector<double> decode(DType type, const std::byte* p, size_t n) {
    std::vector<double> out;
    out.reserve(n);
    const auto& tr = dtype_traits(type);
    for (size_t b = 0; b < n / static_cast<size_t>(tr.block_elems); ++b, p += tr.block_bytes) {
        switch (type) {
            case DType::F32: {
                float f;
                std::memcpy(&f, p, 4);
                out.push_back(f);
                break;
            }
            case DType::F16: out.push_back(f16_at(p)); break;
            case DType::BF16: {
                uint16_t h;
                std::memcpy(&h, p, 2);
                uint32_t bits = static_cast<uint32_t>(h) << 16;
                float f;
                std::memcpy(&f, &bits, 4);
                out.push_back(f);
                break;
            }
            case DType::Q8_0:
                for (int i = 0; i < 32; ++i) out.push_back(f16_at(p) * static_cast<int8_t>(p[2 + i]));
                break;
            case DType::Q4_0: {
                std::vector<double> blk(32);
                for (int i = 0; i < 16; ++i) {
                    const auto q = static_cast<uint8_t>(p[2 + i]);
                    blk[static_cast<size_t>(i)] = f16_at(p) * ((q & 15) - 8);
                    blk[static_cast<size_t>(i) + 16] = f16_at(p) * ((q >> 4) - 8);
                }
                out.insert(out.end(), blk.begin(), blk.end());
                break;
            }
            case DType::Q1_0:
                for (int j = 0; j < 128; ++j) {
                    const bool bit = (static_cast<uint8_t>(p[2 + j / 8]) >> (j % 8)) & 1;
                    out.push_back(bit ? f16_at(p) : -f16_at(p));
                }
                break;
            default: FAIL("no decoder");
        }
    }
    return out;
}

std::vector<float> f32_values(const TensorView& t) {
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    std::memcpy(v.data(), t.data, v.size() * 4);
    return v;
}

}  // namespace

TEST_CASE("tiny llama: valid, complete and deterministic", "[gguf][fixtures]") {
    TinyLlamaOptions o;
    const auto bytes = make_tiny_llama_gguf(o);
    auto f = GgufFile::from_bytes(bytes, "tiny");
    const Metadata& md = f->metadata();
    CHECK(md.get_string("general.architecture") == "llama");
    CHECK(md.get_int("llama.embedding_length") == 64);
    CHECK(md.get_int("llama.block_count") == 2);
    CHECK(md.get_int("llama.feed_forward_length") == 128);
    CHECK(md.get_int("llama.attention.head_count") == 4);
    CHECK(md.get_int("llama.attention.head_count_kv") == 2);
    CHECK(md.get_int("llama.rope.dimension_count") == 16);
    CHECK(md.get_float("llama.rope.freq_base") == 10000.0);
    CHECK(md.get_string("tokenizer.ggml.model") == "llama");
    const auto& tokens = md.get_string_array("tokenizer.ggml.tokens");
    REQUIRE(tokens.size() == 300);
    CHECK(std::set<std::string>(tokens.begin(), tokens.end()).size() == 300);
    CHECK(tokens[1] == "<s>");
    CHECK(tokens[3 + 0x41] == "<0x41>");
    CHECK(tokens[259] == "\xe2\x96\x81");
    CHECK(md.get_array("tokenizer.ggml.scores").floats.size() == 300);
    CHECK(md.get_array("tokenizer.ggml.token_type").ints[0] == 2);
    CHECK(md.get_array("tokenizer.ggml.token_type").ints[100] == 6);
    CHECK(f->tensors().size() == 1 + 2 * 9 + 2);
    CHECK(f->require("blk.1.attn_k.weight").ne[1] == 32);
    CHECK(f->require("blk.0.ffn_down.weight").ne[0] == 128);
    CHECK(f->require("token_embd.weight").ne[1] == 300);

    CHECK(make_tiny_llama_gguf(o) == bytes);
    TinyLlamaOptions other = o;
    other.seed = 99;
    CHECK(make_tiny_llama_gguf(other) != bytes);
    TinyLlamaOptions tied = o;
    tied.tied_output = true;
    auto t = GgufFile::from_bytes(make_tiny_llama_gguf(tied), "tied");
    CHECK(t->find("output.weight") == nullptr);
    // A tensor's values do not depend on the others (seeded by name).
    CHECK(std::memcmp(t->require("blk.0.attn_q.weight").data, f->require("blk.0.attn_q.weight").data,
                      f->require("blk.0.attn_q.weight").nbytes) == 0);

    TinyLlamaOptions bad = o;
    bad.n_heads = 3;
    CHECK_THROWS_AS(make_tiny_llama(bad), std::invalid_argument);
    bad = o;
    bad.weight_type = DType::Q1_0;  // 64 is not a multiple of 128
    CHECK_THROWS_AS(make_tiny_llama(bad), std::invalid_argument);
    bad = o;
    bad.n_vocab = 100;
    CHECK_THROWS_AS(make_tiny_llama(bad), std::invalid_argument);
}

TEST_CASE("fixture encodings decode to the generated values (formats.md, float64)", "[gguf][fixtures]") {
    for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q1_0}) {
        INFO(dtype_name(type));
        TinyLlamaOptions o;
        o.n_embd = 128;
        o.n_ff = 256;
        o.n_layers = 1;
        o.weight_type = type;
        const TinyModel m = make_tiny_llama(o);
        auto f = GgufFile::from_bytes(m.to_bytes(), "enc");
        for (const TinyTensor& tt : m.tensors) {
            INFO(tt.name);
            const TensorView& v = f->require(tt.name);
            CHECK(v.type == tt.type);
            const std::vector<double> got = decode(v.type, v.data, tt.values.size());
            REQUIRE(got.size() == tt.values.size());
            const int64_t block = dtype_traits(v.type).block_elems;
            double worst = 0.0;
            for (size_t i = 0; i < got.size(); ++i) {
                const double x = tt.values[i];
                double tol = 0.0;
                switch (v.type) {
                    case DType::F32: tol = 0.0; break;
                    case DType::F16: tol = std::max(std::abs(x) * std::ldexp(1.0, -11), std::ldexp(1.0, -25)); break;
                    case DType::BF16: tol = std::abs(x) * std::ldexp(1.0, -8); break;
                    default: {
                        // Per block: Q8_0 rounds to d/2 (plus d's own f16 rounding: 127 d 2^-11);
                        // Q4_0 clamps its top level, so up to |d|; Q1_0 keeps only the sign.
                        const size_t b0 = i / static_cast<size_t>(block) * static_cast<size_t>(block);
                        double amax = 0.0;
                        for (size_t j = b0; j < b0 + static_cast<size_t>(block); ++j) {
                            amax = std::max(amax, std::abs(static_cast<double>(tt.values[j])));
                        }
                        if (v.type == DType::Q8_0) tol = amax / 127.0 * (0.5 + 127.0 * std::ldexp(1.0, -11)) + 1e-12;
                        if (v.type == DType::Q4_0) tol = amax / 8.0 * (1.0 + 16.0 * std::ldexp(1.0, -11)) + 1e-12;
                        if (v.type == DType::Q1_0) {
                            if ((got[i] > 0) != (x >= 0)) FAIL_CHECK("value " << i << ": sign of " << x << " lost");
                            tol = std::numeric_limits<double>::infinity();
                        }
                    }
                }
                const double err = std::abs(got[i] - x);
                if (err > tol) FAIL_CHECK("value " << i << ": " << x << " decoded as " << got[i] << " (tol " << tol << ")");
                worst = std::max(worst, err);
            }
            if (v.type == DType::Q1_0) {
                // d is the mean magnitude of each block (rounded to f16).
                for (size_t b0 = 0; b0 < got.size(); b0 += 128) {
                    double mean = 0.0;
                    for (size_t j = b0; j < b0 + 128; ++j) mean += std::abs(static_cast<double>(tt.values[j]));
                    mean /= 128.0;
                    CHECK(std::abs(std::abs(got[b0]) - mean) <= mean * std::ldexp(1.0, -11) + 1e-12);
                }
            }
        }
    }
}

TEST_CASE("fixture quantization equals llama-quantize byte for byte", "[gguf][fixtures][peer]") {
    INLAY_REQUIRE_LLAMACPP_OR_SKIP();
    const fs::path quantize = llamacpp_tool("quantize");
    const fs::path dir = scratch_dir("gguf_fixture_quantize");
    TinyLlamaOptions o;
    o.n_embd = 128;
    o.n_ff = 256;
    o.n_layers = 1;
    const fs::path src = dir / "tiny-f32.gguf";
    {
        const auto bytes = make_tiny_llama_gguf(o);
        std::ofstream(src, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                   static_cast<std::streamsize>(bytes.size()));
    }
    auto ref = GgufFile::open(src.string());
    for (const auto& [name, type] : {std::pair{"Q8_0", DType::Q8_0}, {"Q4_0", DType::Q4_0}, {"Q1_0", DType::Q1_0}}) {
        INFO(name);
        const fs::path out = dir / (std::string(name) + ".gguf");
        const std::string cmd = "'" + quantize.string() + "' '" + src.string() + "' '" + out.string() + "' " + name +
                                " 1 > '" + (dir / "log.txt").string() + "' 2>&1";
        REQUIRE(std::system(cmd.c_str()) == 0);
        auto q = GgufFile::open(out.string());
        int compared = 0;
        for (const TensorView& t : q->tensors()) {
            if (t.type != type) continue;  // llama.cpp picks other types for some tensors
            INFO(t.name);
            const auto mine = encode_fixture_weights(type, f32_values(ref->require(t.name)));
            REQUIRE(mine.size() == t.nbytes);
            CHECK(std::memcmp(mine.data(), t.data, t.nbytes) == 0);
            ++compared;
        }
        CHECK(compared >= 7);
    }
}
