// GgufFile against real third-party files (facts from shared/testdata/README.md) and
// against llama.cpp's own conversions (llama-quantize wrote the f16/bf16 files from
// the f32 one, so their data must equal our conversion of the f32 data).
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "core/error.h"
#include "core/half.h"
#include "io/gguf_reader.h"
#include "support/gguf_fixtures.h"
#include "support/test_paths.h"

using namespace inlay;
namespace fs = std::filesystem;

namespace {

float f32_at(const TensorView& t, int64_t i) {
    float v;
    std::memcpy(&v, t.data + i * 4, 4);
    return v;
}

uint16_t u16_at(const TensorView& t, int64_t i) {
    uint16_t v;
    std::memcpy(&v, t.data + i * 2, 2);
    return v;
}

}  // namespace

TEST_CASE("every .gguf in testdata parses", "[gguf]") {
    const fs::path root = test::testdata("");
    INLAY_REQUIRE_FILE_OR_SKIP(root);
    int n = 0;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
        if (entry.path().extension() != ".gguf") continue;
        INFO(entry.path().string());
        std::unique_ptr<GgufFile> f;
        REQUIRE_NOTHROW(f = GgufFile::open(entry.path().string()));
        CHECK(f->version() == 3);
        CHECK(f->file_bytes() == fs::file_size(entry.path()));
        for (const auto& t : f->tensors()) {
            CHECK(t.data >= f->bytes().data() + f->data_offset());
            CHECK(t.data + t.nbytes <= f->bytes().data() + f->bytes().size());
            CHECK(f->find(t.name) == &t);
        }
        ++n;
    }
    CHECK(n >= 20);
}

TEST_CASE("stories260K header facts", "[gguf]") {
    const auto path = test::testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    auto f = GgufFile::open(path.string());
    CHECK(f->version() == 3);
    CHECK(f->alignment() == 32);
    CHECK(f->data_offset() == 14176);
    CHECK(f->metadata().size() == 19);
    REQUIRE(f->tensors().size() == 48);
    const Metadata& md = f->metadata();
    CHECK(md.get_string("general.architecture") == "llama");
    CHECK(md.get_int("llama.embedding_length") == 64);
    CHECK(md.get_int("llama.block_count") == 5);
    CHECK(md.get_int("llama.feed_forward_length") == 172);
    CHECK(md.get_int("llama.attention.head_count") == 8);
    CHECK(md.get_int("llama.attention.head_count_kv") == 4);
    CHECK(md.get_int("llama.context_length") == 2048);
    CHECK(md.find("llama.attention.layer_norm_rms_epsilon")->type == ValueType::F32);
    CHECK(md.get_float("llama.attention.layer_norm_rms_epsilon") == Approx(1e-5).epsilon(1e-6));
    CHECK_FALSE(md.contains("llama.rope.freq_base"));
    CHECK(md.get_int("tokenizer.ggml.padding_token_id") == 4294967295LL);
    const auto& tokens = md.get_string_array("tokenizer.ggml.tokens");
    REQUIRE(tokens.size() == 512);
    CHECK(tokens[0] == "<unk>");
    CHECK(tokens[1] == "<s>");
    CHECK(tokens[2] == "</s>");
    CHECK(tokens[3] == "<0x00>");
    CHECK(tokens[258] == "<0xFF>");
    CHECK(md.get_array("tokenizer.ggml.token_type").elem_type == ValueType::I32);
    CHECK(md.get_array("tokenizer.ggml.scores").floats.size() == 512);

    const TensorView& emb = f->require("token_embd.weight");
    CHECK(emb.type == DType::F32);
    CHECK(emb.n_dims == 2);
    CHECK(emb.ne[0] == 64);
    CHECK(emb.ne[1] == 512);
    CHECK(emb.nbytes == 64 * 512 * 4);
    CHECK(f->require("output_norm.weight").n_dims == 1);
    CHECK(f->require("blk.4.attn_k.weight").ne[1] == 32);
    CHECK(f->require("blk.0.ffn_down.weight").ne[0] == 172);
    CHECK(f->require("blk.0.ffn_down.weight").ne[1] == 64);
    CHECK(f->find("output.weight") != nullptr);
    CHECK(f->find("nope") == nullptr);
    try {
        (void)f->require("nope");
        FAIL("require did not throw");
    } catch (const Error& e) {
        CHECK(e.status() == INLAY_ERR_MISSING);
    }

    // The tensors tile the data section back to back, each padded to 32 bytes, and
    // the file ends with the last one: the sizes we computed account for every byte.
    uint64_t expect = 0;
    for (size_t i = 0; i < f->tensors().size(); ++i) {
        CHECK(f->tensor_offset(i) == expect);
        expect += (f->tensors()[i].nbytes + 31) / 32 * 32;
    }
    CHECK(f->data_offset() + f->tensors().back().nbytes + f->tensor_offset(47) == f->file_bytes());
    // A trained model's RMSNorm gains are finite, non-zero and of modest size.
    const TensorView& norm = f->require("output_norm.weight");
    for (int64_t i = 0; i < 64; ++i) {
        CHECK(std::isfinite(f32_at(norm, i)));
        CHECK(std::abs(f32_at(norm, i)) < 100.0f);
    }
}

TEST_CASE("llama-2-tiny-random and vocab-only files", "[gguf]") {
    const auto path = test::testdata("models/llama-2-tiny-random.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    auto f = GgufFile::open(path.string());
    CHECK(f->data_offset() == 724416);
    CHECK(f->metadata().size() == 18);
    CHECK(f->tensors().size() == 12);
    CHECK(f->metadata().get_int("general.file_type") == 1);
    CHECK(f->metadata().get_string("general.name") == "LLaMA v2");
    CHECK(f->metadata().get_string_array("tokenizer.ggml.tokens").size() == 32000);
    const TensorView& emb = f->require("token_embd.weight");
    CHECK(emb.type == DType::F16);
    CHECK(emb.ne[0] == 8);
    CHECK(emb.ne[1] == 32000);
    CHECK(f->require("blk.0.ffn_down.weight").ne[0] == 32);
    CHECK(f->require("output_norm.weight").type == DType::F32);

    for (const char* name : {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-phi-3.gguf",
                             "vocab/ggml-vocab-gpt-2.gguf"}) {
        INFO(name);
        auto v = GgufFile::open(test::testdata(name).string());
        CHECK(v->tensors().empty());
        CHECK(v->data_offset() <= v->file_bytes());
    }
    auto spm = GgufFile::open(test::testdata("vocab/ggml-vocab-llama-spm.gguf").string());
    CHECK(spm->metadata().get_string_array("tokenizer.ggml.tokens").size() == 32000);
    const MetadataValue* add_bos = spm->metadata().find("tokenizer.ggml.add_bos_token");
    const MetadataValue* add_eos = spm->metadata().find("tokenizer.ggml.add_eos_token");
    REQUIRE(add_bos);
    REQUIRE(add_eos);
    CHECK(add_bos->type == ValueType::BOOL);
    CHECK(std::get<int64_t>(add_bos->value) == 1);
    CHECK(std::get<int64_t>(add_eos->value) == 0);
    CHECK(spm->metadata().get_string("tokenizer.ggml.pre") == "default");
    // The llama-2-tiny-random vocabulary equals Llama 2's (README).
    CHECK(spm->metadata().get_string_array("tokenizer.ggml.tokens") ==
          f->metadata().get_string_array("tokenizer.ggml.tokens"));
    auto gpt2 = GgufFile::open(test::testdata("vocab/ggml-vocab-gpt-2.gguf").string());
    CHECK(gpt2->metadata().get_string_array("tokenizer.ggml.tokens").size() == 50257);
    CHECK(gpt2->metadata().get_string_array("tokenizer.ggml.merges").size() == 50000);
    CHECK(gpt2->metadata().get_int("tokenizer.ggml.bos_token_id") == 50256);
    auto phi3 = GgufFile::open(test::testdata("vocab/ggml-vocab-phi-3.gguf").string());
    CHECK(phi3->metadata().get_string_array("tokenizer.ggml.tokens").size() == 32064);
    CHECK(phi3->metadata().contains("tokenizer.chat_template"));
}

TEST_CASE("llama.cpp's f16/bf16 files equal our conversion of its f32 file", "[gguf]") {
    for (const char* model : {"llama-r256", "qwen3-r256"}) {
        const auto f32_path = test::testdata(std::string("llamacpp-refs/") + model + "-f32.gguf");
        INLAY_REQUIRE_FILE_OR_SKIP(f32_path);
        auto ref = GgufFile::open(f32_path.string());
        for (const char* kind : {"f16", "bf16"}) {
            INFO(model << " " << kind);
            auto f = GgufFile::open(test::testdata(std::string("llamacpp-refs/") + model + "-" + kind + ".gguf").string());
            REQUIRE(f->tensors().size() == ref->tensors().size());
            int converted = 0;
            for (const TensorView& t : f->tensors()) {
                INFO(t.name);
                const TensorView& r = ref->require(t.name);
                REQUIRE(r.type == DType::F32);
                REQUIRE(t.ne == r.ne);
                REQUIRE(t.n_dims == r.n_dims);
                const int64_t n = t.n_elements();
                if (t.type == DType::F32) {
                    REQUIRE(t.nbytes == r.nbytes);
                    CHECK(std::memcmp(t.data, r.data, t.nbytes) == 0);
                    continue;
                }
                REQUIRE(t.nbytes == static_cast<size_t>(n) * 2);
                int64_t mismatches = 0;
                for (int64_t i = 0; i < n; ++i) {
                    const float x = f32_at(r, i);
                    const uint16_t want = t.type == DType::F16 ? f32_to_f16_portable(x) : f32_to_bf16(x);
                    if (u16_at(t, i) != want) ++mismatches;
                }
                CHECK(mismatches == 0);
                ++converted;
            }
            CHECK(converted > 0);
        }
    }
}

TEST_CASE("reader edge cases that must load", "[gguf]") {
    // Tensor data in the opposite order of the tensor infos, a zero-sized tensor, a
    // u64 scalar above INT64_MAX, version 2, alignment 8 and a 4-D tensor.
    test::GgufBytes b;
    b.header(2, 4, 2).kv_u64("test.big", ~0ULL).kv_u32("general.alignment", 8);
    b.tensor_info("late", {2}, 0, 16).tensor_info("early", {1, 2, 1, 2}, 0, 0);
    b.tensor_info("empty", {0, 5}, 0, 24).tensor_info("tail", {1}, 0, 24);
    b.pad_to(8);
    const size_t data_at = b.size();
    for (int i = 0; i < 7; ++i) b.f32(static_cast<float>(i));
    auto f = GgufFile::from_bytes(b.bytes(), "edge");
    CHECK(f->version() == 2);
    CHECK(f->alignment() == 8);
    CHECK(f->data_offset() == data_at);
    CHECK(std::get<uint64_t>(f->metadata().find("test.big")->value) == ~0ULL);
    CHECK(f32_at(f->require("early"), 3) == 3.0f);
    CHECK(f32_at(f->require("late"), 0) == 4.0f);
    CHECK(f32_at(f->require("tail"), 0) == 6.0f);
    CHECK(f->require("early").n_dims == 4);
    CHECK(f->require("early").n_elements() == 4);
    CHECK(f->require("empty").nbytes == 0);
    CHECK(f->require("empty").n_elements() == 0);
    CHECK(f->tensor_offset(0) == 16);
}
