// `inlay convert`: the tensor types it picks (llama.cpp's rules and fallbacks); that every
// type it writes holds the folder's weights up to the type's rounding and loads in inlay
// close to the source folder; and (tools/llamacpp's tools on llama.cpp's libraries) that
// llama.cpp loads every file, tokenizes like inlay and computes the same logits as inlay
// does on the same file and on the source folder's model with the file's weights.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <span>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "io/gguf_reader.h"
#include "io/gguf_writer.h"
#include "model/families/hf_convert.h"
#include "model/model.h"
#include "quant/quantize.h"
#include "runtime/session.h"
#include "support/safetensors_fixtures.h"
#include "support/llamacpp.h"
#include "support/test_paths.h"

using namespace inlay;
using test::TinyHfOptions;
namespace fs = std::filesystem;

namespace {

std::shared_ptr<const Model> load(const fs::path& path) {
    ModelOptions options;
    options.n_threads = 2;
    return Model::load(path.string(), options);
}

std::vector<float> eval(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& tokens) {
    Session session(model, 0);
    return session.eval_logits(tokens);
}

// Runs a shell command; stdout to `out`, stderr kept beside it.
int run(const std::string& cmd, const fs::path& dir, std::string& out) {
    const fs::path o = dir / "stdout.txt", e = dir / "stderr.txt";
    const int rc = std::system((cmd + " > '" + o.string() + "' 2> '" + e.string() + "'").c_str());
    out = inlay::test::read_file(o);
    return rc;
}


const ConvertType kAllTypes[] = {ConvertType::f32,  ConvertType::f16,  ConvertType::bf16,
                                 ConvertType::q8_0, ConvertType::q4_k, ConvertType::q1_0};

// The llama-r256 shape of the llamacpp-refs models: rows fit every block size.
TinyHfOptions r256(const char* arch) {
    TinyHfOptions o;
    o.arch = arch;
    o.n_embd = 256;
    o.n_ff = 512;
    o.n_heads = 4;
    o.n_kv_heads = 2;
    o.n_layers = 2;
    o.tied = std::string(arch) == "qwen3";
    if (o.tied) o.head_dim = 128;
    return o;
}

// |llama.cpp - inlay| on the same converted file, relative to the largest |logit|: about
// twice the largest difference measured over the 3 models x 14 to 17 positions x
// llama.cpp's top-8 (WARN lines below: f32 2.4e-4, f16 5.8e-4, bf16 1.6e-3, q8_0 4.7e-3,
// q4_k 5.0e-3, q1_0 8.1e-3). f32 and f16/bf16 differ in the order of sums and where
// activations round (f16 KV cache, flash-attention accumulators); quantized files share
// the activation quantization, so most logits agree to ~1e-6, and one rounding flip in a
// quantized activation moves a few logits (most with Q1_0, whose weights are all +-d).
double same_file_bound(ConvertType t) {
    switch (t) {
        case ConvertType::f32:
            return 5e-4;
        case ConvertType::f16:
        case ConvertType::bf16:
            return 3e-3;
        case ConvertType::q8_0:
        case ConvertType::q4_k:
            return 1e-2;
        case ConvertType::q1_0:
            return 1.6e-2;
    }
    return 0;
}

// The relative RMS error ||decoded - w|| / ||w|| of one tensor stored in `type`, for the
// fixtures' uniform weights (|w| <= a, RMS a/sqrt(3)), as plain round-to-nearest on the
// type's grid gives it, from the formats' definitions (formats.md):
//   F16 / BF16: each value within 2^-11 / 2^-8 of itself (11 / 8 significant bits);
//   Q8_0: step amax/127, error RMS step/sqrt(12): 1/254 of the weights' RMS;
//   Q6_K: step amax/32 (levels -32..31): 1/64;
//   Q4_K: 15 steps over each 32-value sub-block's [min, max], about [-a, a]: 1/15;
//   Q1_0: +-mean|w| per block: sqrt(Var|w| / E[w^2]) = sqrt((a^2/12) / (a^2/3)) = 1/2.
// Searched scales (Q4_K, Q6_K) only do better than plain rounding; the 10% on the
// quantized types covers the spread of 32- to 256-value blocks and the rounding of the
// block scales (f16 d, 6- and 8-bit sub-block scales). Largest measured (llama and qwen3
// r256; WARN lines): F16 0.0002, BF16 0.0018, Q8_0 0.0038, Q6_K 0.0130, Q4_K 0.0547,
// Q1_0 0.5015.
double weight_error_bound(DType type) {
    switch (type) {
        case DType::F32:
            return 0;
        case DType::F16:
            return 0x1p-11;
        case DType::BF16:
            return 0x1p-8;
        case DType::Q8_0:
            return 1.1 / 254;
        case DType::Q6_K:
            return 1.1 / 64;
        case DType::Q4_K:
            return 1.1 / 15;
        case DType::Q1_0:
            return 1.1 / 2;
        default:
            return 0;
    }
}

struct DecodedFile {
    // sqrt of the sum over the matrices of their squared relative RMS errors: how far
    // independent weight errors move the logits to first order, relative to their RMS
    // (each matrix feeds an RMS-normalised residual stream with a gain of about 1).
    double combined = 0;
    std::map<DType, double> worst;  // the largest error per storage type, for the WARN line
};

// Writes `out`: the converted file `file` with every tensor decoded to F32 (names, order
// and metadata kept), i.e. the model the file stores, free of its storage types; and
// checks each tensor's relative RMS error against the same tensor of `f32_file` (the
// folder's weights in GGUF order) with weight_error_bound().
DecodedFile decode_to_f32(const fs::path& file, const fs::path& f32_file, const fs::path& out) {
    const auto src = GgufFile::open(file.string());
    const auto ref = GgufFile::open(f32_file.string());
    GgufWriter writer;
    writer.copy_metadata(src->metadata());
    DecodedFile result;
    for (const TensorView& t : src->tensors()) {
        INFO(t.name << " " << dtype_name(t.type));
        const TensorView& w = ref->require(t.name);
        REQUIRE(w.type == DType::F32);
        REQUIRE(w.n_elements() == t.n_elements());
        std::vector<float> decoded(static_cast<size_t>(t.n_elements()));
        for (int64_t r = 0; r < t.n_rows(); ++r)
            quant::dequantize_row(t.type, t.data + static_cast<size_t>(r) * t.row_stride(),
                                  decoded.data() + r * t.row_length(), t.row_length());
        const auto* want = reinterpret_cast<const float*>(w.data);
        double err2 = 0, norm2 = 0;
        for (size_t i = 0; i < decoded.size(); ++i) {
            err2 += (static_cast<double>(decoded[i]) - want[i]) * (static_cast<double>(decoded[i]) - want[i]);
            norm2 += static_cast<double>(want[i]) * want[i];
        }
        const double rel = std::sqrt(err2 / norm2);
        CHECK(rel <= weight_error_bound(t.type));
        if (t.n_dims >= 2) result.combined += rel * rel;
        result.worst[t.type] = std::max(result.worst[t.type], rel);
        writer.add_tensor(t.name, DType::F32, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                          std::as_bytes(std::span(decoded)));
    }
    result.combined = std::sqrt(result.combined);
    writer.write_file(out.string());
    return result;
}

double max_abs(const std::vector<float>& v) {
    double m = 0;
    for (const float x : v) m = std::max(m, static_cast<double>(std::fabs(x)));
    return m;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
    return m;
}

// ||a - b|| / ||b|| over whole logit rows.
double rel_rms(const std::vector<float>& a, const std::vector<float>& b) {
    double e = 0, n = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        e += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
        n += static_cast<double>(b[i]) * b[i];
    }
    return std::sqrt(e / n);
}

// Pearson correlation of two logit rows, averaged over the rows (positions): how much of
// one model's preferences another shares, whatever the scale. A constant row (zero
// logits, say) correlates with nothing: 0.
double mean_row_correlation(const std::vector<float>& a, const std::vector<float>& b, size_t n_vocab) {
    const size_t rows = a.size() / n_vocab;
    double sum = 0;
    for (size_t r = 0; r < rows; ++r) {
        double ma = 0, mb = 0;
        for (size_t i = 0; i < n_vocab; ++i) {
            ma += a[r * n_vocab + i];
            mb += b[r * n_vocab + i];
        }
        ma /= static_cast<double>(n_vocab);
        mb /= static_cast<double>(n_vocab);
        double ab = 0, aa = 0, bb = 0;
        for (size_t i = 0; i < n_vocab; ++i) {
            const double x = a[r * n_vocab + i] - ma, y = b[r * n_vocab + i] - mb;
            ab += x * y;
            aa += x * x;
            bb += y * y;
        }
        sum += aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
    }
    return sum / static_cast<double>(rows);
}

std::vector<int32_t> prompt_ids(int64_t n_vocab, size_t n) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 61 + 11) % static_cast<size_t>(n_vocab)));
    return ids;
}

}  // namespace

TEST_CASE("convert picks llama.cpp's tensor types", "[convert]") {
    const auto type = [](ConvertType t, const char* name, int n_dims, int64_t row, int64_t layer = -1,
                         int64_t n_layers = 2, bool tied = false) {
        return convert_tensor_type(t, name, n_dims, row, layer, n_layers, tied);
    };
    // Norms and rope factors stay F32 whatever the type.
    for (const ConvertType t : kAllTypes) {
        CHECK(type(t, "blk.0.attn_norm.weight", 1, 256) == DType::F32);
        CHECK(type(t, "rope_freqs.weight", 1, 64) == DType::F32);
    }
    CHECK(type(ConvertType::f16, "blk.0.attn_q.weight", 2, 64) == DType::F16);
    CHECK(type(ConvertType::bf16, "output.weight", 2, 64) == DType::BF16);
    CHECK(type(ConvertType::q8_0, "output.weight", 2, 256) == DType::Q8_0);
    // Q4_K_M: output Q6_K; attn_v / ffn_down Q6_K in the layers use_more_bits() picks.
    CHECK(type(ConvertType::q4_k, "output.weight", 2, 256) == DType::Q6_K);
    CHECK(type(ConvertType::q4_k, "token_embd.weight", 2, 256) == DType::Q4_K);
    CHECK(type(ConvertType::q4_k, "token_embd.weight", 2, 256, -1, 2, true) == DType::Q6_K);
    CHECK(type(ConvertType::q4_k, "blk.0.attn_v.weight", 2, 256, 0, 2) == DType::Q4_K);
    CHECK(type(ConvertType::q4_k, "blk.1.attn_v.weight", 2, 256, 1, 2) == DType::Q6_K);  // as llamacpp-refs q4_k_m
    CHECK(type(ConvertType::q4_k, "blk.1.ffn_down.weight", 2, 512, 1, 2) == DType::Q6_K);
    CHECK(type(ConvertType::q4_k, "blk.1.attn_q.weight", 2, 256, 1, 2) == DType::Q4_K);
    // 32 layers: the first 4, the last 4 and every third from layer 6 get more bits.
    int more = 0;
    for (int64_t l = 0; l < 32; ++l)
        more += type(ConvertType::q4_k, "blk.x.ffn_down.weight", 2, 256, l, 32) == DType::Q6_K;
    CHECK(more == 4 + 4 + 8);
    CHECK(type(ConvertType::q1_0, "blk.0.ffn_up.weight", 2, 256) == DType::Q1_0);
    CHECK(type(ConvertType::q1_0, "output.weight", 2, 256) == DType::Q6_K);
    // Fallbacks for rows that do not fill blocks.
    std::string why;
    CHECK(convert_tensor_type(ConvertType::q4_k, "blk.0.attn_q.weight", 2, 64, 0, 2, false, &why) == DType::Q8_0);
    CHECK_THAT(why, Catch::Contains("not a multiple of the q4_K block (256)"));
    CHECK(convert_tensor_type(ConvertType::q4_k, "blk.0.attn_q.weight", 2, 48, 0, 2, false, &why) == DType::F16);
    CHECK(convert_tensor_type(ConvertType::q1_0, "blk.0.attn_q.weight", 2, 96, 0, 2, false, &why) == DType::Q8_0);
    CHECK(convert_tensor_type(ConvertType::q8_0, "blk.0.attn_q.weight", 2, 20, 0, 2, false, &why) == DType::F16);
    CHECK(convert_tensor_type(ConvertType::q8_0, "blk.0.attn_q.weight", 2, 64, 0, 2, false, &why) == DType::Q8_0);
    CHECK(why.empty());
    CHECK(convert_type_from_name("q4_k") == ConvertType::q4_k);
    CHECK_FALSE(convert_type_from_name("q4_K_M"));
    CHECK(convert_file_type(ConvertType::bf16) == 32);
}

// Relative to the largest |logit|: how far inlay's logits on a converted file may be from
// those on the same file with its weights decoded to F32. Only the rounding of the
// activations the kernels make for the storage type differs: f16 / bf16 matmul inputs
// for f16 / bf16 weights, Q8_0 or Q8_K activations (steps of 1/127 of each block's
// largest value, as fine as Q8_0 weights) for the quantized ones. About twice the largest
// difference measured over llama and qwen3 (f16 0.0013, bf16 0.0042, q8_0 0.013, q4_k
// 0.021, q1_0 0.016; WARN lines).
double activation_bound(ConvertType t) {
    switch (t) {
        case ConvertType::f32:
            return 0;  // the same bytes: the same logits
        case ConvertType::f16:
            return 3e-3;
        case ConvertType::bf16:
            return 1e-2;
        case ConvertType::q8_0:
        case ConvertType::q4_k:
        case ConvertType::q1_0:
            return 4e-2;
    }
    return 0;
}

TEST_CASE("every converted type loads in inlay and stays close to the folder", "[convert]") {
    // Three links, each with a bound from its own cause: the file's weights are the
    // folder's up to their type's rounding (weight_error_bound, per tensor, against the
    // f32 conversion: this also checks names, shapes and the Q/K permutation of every
    // type); inlay on the file computes what its decoded weights give up to activation
    // rounding (activation_bound); and the decoded weights move the logits from the
    // folder's as independent weight errors do to first order: relative RMS change over
    // all logits <= gain x sqrt(sum over the matrices of their squared relative errors)
    // (DecodedFile::combined). Each matrix feeds an RMS-normalised residual stream, so the
    // gain is about 1: measured 0.46 (q1_0) to 1.16 (qwen3 f16); the bound takes 1.5.
    // This is what "close to the folder" can mean for a type whose rounding is large
    // (Q1_0 keeps only signs, about half of each uniform weight), together with the
    // correlation check below, which a decoder giving zero or unrelated logits fails.
    for (const char* arch : {"llama", "qwen3"}) {
        const fs::path dir = test::scratch_dir(std::string("convert_types_") + arch);
        const auto m = test::write_tiny_hf_folder(dir / "folder", r256(arch));
        const auto folder_model = load(dir / "folder");
        const auto tokens = prompt_ids(m.n_vocab, 12);
        const auto want = eval(folder_model, tokens);
        const double max_logit = max_abs(want);
        // The control: the same shapes and weight statistics, other random weights.
        auto unrelated_options = r256(arch);
        unrelated_options.seed += 1;
        test::write_tiny_hf_folder(dir / "unrelated", unrelated_options);
        const double unrelated_corr =
            mean_row_correlation(eval(load(dir / "unrelated"), tokens), want, static_cast<size_t>(m.n_vocab));
        const fs::path f32_file = dir / "f32.gguf";
        for (const ConvertType t : kAllTypes) {  // f32 first: the other types' reference
            INFO(arch << " " << convert_type_name(t));
            const fs::path out = dir / fmt::format("{}.gguf", convert_type_name(t));
            ConvertOptions options;
            options.type = t;
            const auto report = convert_hf_folder((dir / "folder").string(), out.string(), options);
            CHECK(report.file_bytes == fs::file_size(out));
            for (const auto& tensor : report.tensors) CHECK(tensor.reason.find("not a multiple") == std::string::npos);
            auto file = GgufFile::open(out.string());
            CHECK(file->metadata().get_int("general.file_type") == convert_file_type(t));
            CHECK(file->metadata().get_string("general.architecture") == arch);
            CHECK(file->require("output_norm.weight").type == DType::F32);

            const fs::path decoded_path = dir / fmt::format("{}-decoded.gguf", convert_type_name(t));
            const DecodedFile decoded = decode_to_f32(out, f32_file, decoded_path);
            const auto got = eval(load(out), tokens);
            const auto got_decoded = eval(load(decoded_path), tokens);
            const double act = max_abs_diff(got, got_decoded) / max_logit;
            const double drift = rel_rms(got_decoded, want);
            std::string weights;
            for (const auto& [type, err] : decoded.worst) weights += fmt::format(" {} {:.4f}", dtype_name(type), err);
            WARN(arch << " " << convert_type_name(t) << ": worst weight error" << weights << "; |file - decoded| / max|logit| = " << act << "; logits' relative RMS change "
                      << drift << " vs combined weight error " << decoded.combined << "; max |file - folder| / "
                      << "max|logit| = " << max_abs_diff(got, want) / max_logit);
            CHECK(act <= activation_bound(t));
            CHECK(drift <= 1.5 * decoded.combined + 1e-4);  // + f32 arithmetic (neox vs permuted rows)
            // The drift bound says little where the rounding is large: Q1_0 moves the
            // logits by about their own size (1.09 and 0.86 measured, bound 2.9), as zero
            // or random logits would (1.0 and ~1.4). What must survive any rounding that
            // keeps information is the direction of the logits: the decoded model must
            // share clearly more of the folder's preferences than a model of the same
            // shape with unrelated weights does (the same fixture, another seed) - by
            // 4 / sqrt(n_vocab), four standard errors of one row's correlation between
            // unrelated logits. Measured: unrelated 0.005 (llama) and 0.139 (qwen3, whose
            // tied embeddings correlate the logits with the input token), q1_0 0.418 and
            // 0.650, every other type above 0.98; zero logits give 0.
            const double corr = mean_row_correlation(got_decoded, want, static_cast<size_t>(m.n_vocab));
            INFO("logit correlation with the folder " << corr << ", an unrelated model's " << unrelated_corr);
            CHECK(corr >= unrelated_corr + 4 / std::sqrt(static_cast<double>(m.n_vocab)));
        }
    }
}

TEST_CASE("convert reports fallbacks for rows that do not fit a type's blocks", "[convert]") {
    const fs::path dir = test::scratch_dir("convert_fallback");
    test::write_tiny_hf_folder(dir / "folder", TinyHfOptions{});  // hidden 64, ff 96
    ConvertOptions options;
    options.type = ConvertType::q4_k;
    const auto report = convert_hf_folder((dir / "folder").string(), (dir / "q4_k.gguf").string(), options);
    size_t fallbacks = 0;
    for (const auto& t : report.tensors) {
        if (t.name.ends_with("norm.weight")) {
            CHECK(t.type == DType::F32);
            continue;
        }
        INFO(t.name);
        CHECK(t.type == DType::Q8_0);  // every row (64 or 96) misses the 256 block; 32 fits
        CHECK_THAT(t.reason, Catch::Contains("instead"));
        ++fallbacks;
    }
    CHECK(fallbacks == 1 + 2 * 7 + 1);
    CHECK_NOTHROW(load(dir / "q4_k.gguf"));
}

TEST_CASE("convert names what it cannot write", "[convert][malformed]") {
    const auto edit_text = [](const fs::path& p, const std::string& from, const std::string& to) {
        std::string s = inlay::test::read_file(p);
        const size_t at = s.find(from);
        REQUIRE(at != std::string::npos);
        s.replace(at, from.size(), to);
        std::ofstream(p, std::ios::binary) << s;
    };
    struct Case {
        const char* name;
        std::function<void(const fs::path&)> edit;
        inlay_status status;
        const char* message;
    };
    const std::vector<Case> cases = {
        {"regex", [&](const fs::path& d) { edit_text(d / "tokenizer.json", "\\\\p{N}{1,3}", "\\\\p{N}{1,4}"); },
         INLAY_ERR_UNSUPPORTED, "split regex is not one inlay knows"},
        {"no_pre_tokenizer",
         [&](const fs::path& d) { edit_text(d / "tokenizer.json", "\"pre_tokenizer\"", "\"pre\""); },
         INLAY_ERR_UNSUPPORTED, "no pre_tokenizer"},
        {"unigram", [&](const fs::path& d) { edit_text(d / "tokenizer.json", "\"BPE\"", "\"Unigram\""); },
         INLAY_ERR_UNSUPPORTED, "model type \"Unigram\" is not supported (BPE)"},
        {"bad_merge", [&](const fs::path& d) { edit_text(d / "tokenizer.json", "\"merges\": [", "\"merges\": [7, "); },
         INLAY_ERR_BAD_FORMAT, "merge 0 is neither"},
        {"id_beyond_vocab", [&](const fs::path& d) { edit_text(d / "tokenizer.json", "\"id\": 306", "\"id\": 999"); },
         INLAY_ERR_SHAPE_MISMATCH, "has id 999, beyond config.json's vocab_size 307"},
        {"eos_unknown", [&](const fs::path& d) { edit_text(d / "tokenizer_config.json", "<|im_end|>", "<|nope|>"); },
         INLAY_ERR_BAD_FORMAT, "eos_token \"<|nope|>\" is not in the vocabulary"},
        {"eos_not_string", [&](const fs::path& d) { edit_text(d / "tokenizer_config.json", "\"<|im_end|>\"", "7"); },
         INLAY_ERR_BAD_FORMAT, "\"eos_token\" is neither a string"},
        {"no_tokenizer", [](const fs::path& d) { fs::remove(d / "tokenizer.json"); }, INLAY_ERR_MISSING,
         "has neither tokenizer.model nor tokenizer.json"},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        const fs::path dir = test::scratch_dir(std::string("convert_bad_") + c.name);
        test::write_tiny_hf_folder(dir, TinyHfOptions{});
        c.edit(dir);
        try {
            convert_hf_folder(dir.string(), (dir / "out.gguf").string(), {});
            FAIL("expected an error");
        } catch (const Error& e) {
            INFO(e.what());
            CHECK(e.status() == c.status);
            CHECK_THAT(e.what(), Catch::Contains(c.message));
        }
        CHECK_FALSE(fs::exists(dir / "out.gguf"));
    }
    const fs::path dir = test::scratch_dir("convert_bad_output");
    test::write_tiny_hf_folder(dir, TinyHfOptions{});
    try {
        convert_hf_folder(dir.string(), (dir / "no-such-dir" / "out.gguf").string(), {});
        FAIL("expected an error");
    } catch (const Error& e) {
        CHECK(e.status() == INLAY_ERR_IO);
    }
}

TEST_CASE("llama.cpp loads every converted file and agrees with inlay", "[convert][peer]") {
    // llama.cpp on each file against (1) inlay on the same file (same_file_bound) and
    // (2) inlay on the source folder's model with the file's weights: the file decoded to
    // F32 (same_file_bound + activation_bound: llama.cpp rounds activations as inlay does
    // on the file). How far the file's weights are from the folder's is the type's own
    // rounding, bounded in the test case above; that difference is printed, not asserted.
    INLAY_REQUIRE_LLAMACPP_OR_SKIP();
    const fs::path dump = test::llamacpp_tool("logits");
    const fs::path tokenize = test::llamacpp_tool("tokenize");
    std::vector<std::pair<std::string, TinyHfOptions>> models = {{"llama", r256("llama")}, {"qwen3", r256("qwen3")}};
    if (fs::exists(test::spm_source())) {
        auto o = r256("llama");
        o.tokenizer = test::TinyTokenizer::spm;
        models.emplace_back("llama-spm", o);
    }
    for (const auto& [label, options] : models) {
        const fs::path dir = test::scratch_dir("convert_peer_" + label);
        test::write_tiny_hf_folder(dir / "folder", options);
        const auto folder_model = load(dir / "folder");
        const auto n_vocab = static_cast<size_t>(folder_model->spec().n_vocab);
        const Session tok_session(folder_model, 0);
        const auto tokens = tok_session.tokenize_input("the cat was on the mat and you 12", true, true);
        const auto folder_logits = eval(folder_model, tokens);
        const double max_logit = max_abs(folder_logits);
        std::string ids;
        for (const int32_t t : tokens) ids += fmt::format("{}{}", ids.empty() ? "" : ",", t);
        for (const ConvertType t : kAllTypes) {  // f32 first: the decoding's reference
            const std::string type_name(convert_type_name(t));
            INFO(label << " " << type_name);
            const fs::path out = dir / (type_name + ".gguf");
            ConvertOptions co;
            co.type = t;
            convert_hf_folder((dir / "folder").string(), out.string(), co);
            const auto file_logits = eval(load(out), tokens);
            decode_to_f32(out, dir / "f32.gguf", dir / (type_name + "-decoded.gguf"));
            const auto decoded_logits = eval(load(dir / (type_name + "-decoded.gguf")), tokens);

            // llama.cpp tokenizes the prompt as inlay's folder tokenizer does.
            std::string tok_out;
            REQUIRE(run("'" + tokenize.string() + "' '" + out.string() + "' 'the cat was on the mat and you 12'", dir,
                        tok_out) == 0);
            INFO("llamacpp-tokenize: " << tok_out);
            CHECK(tok_out.find(fmt::format("[{}]", fmt::join(tokens, ", "))) != std::string::npos);

            std::string json_text;
            REQUIRE(run("'" + dump.string() + "' '" + out.string() + "' --tokens " + ids + " --n 1 --k 8 --threads 1",
                        dir, json_text) == 0);
            const auto ref = nlohmann::json::parse(json_text);
            REQUIRE(ref["prompt_top"].size() == tokens.size());
            const double tol_same = same_file_bound(t) * max_logit;
            const double tol_decoded = (same_file_bound(t) + activation_bound(t)) * max_logit;
            double same = 0, decoded = 0, folder = 0;
            int top1_file = 0, top1_decoded = 0;
            for (size_t p = 0; p < tokens.size(); ++p) {
                const auto& top = ref["prompt_top"][p];
                for (const auto& e : top) {
                    const auto id = e["id"].get<size_t>();
                    const double v = e["logit"].get<double>();
                    same = std::max(same, std::fabs(file_logits[p * n_vocab + id] - v));
                    decoded = std::max(decoded, std::fabs(decoded_logits[p * n_vocab + id] - v));
                    folder = std::max(folder, std::fabs(folder_logits[p * n_vocab + id] - v));
                }
                const auto argmax = [&](const std::vector<float>& l) {
                    const float* row = l.data() + p * n_vocab;
                    return std::max_element(row, row + n_vocab) - row;
                };
                const double gap = top[0]["logit"].get<double>() - top[1]["logit"].get<double>();
                const auto best = top[0]["id"].get<int64_t>();
                if (gap > 2 * tol_same) {
                    CHECK(argmax(file_logits) == best);
                    ++top1_file;
                }
                if (gap > 2 * tol_decoded) {
                    CHECK(argmax(decoded_logits) == best);
                    ++top1_decoded;
                }
            }
            WARN(label << " " << type_name << ": max |llama.cpp - inlay| / max|logit|: on the file " << same / max_logit
                       << " (top-1 checked at " << top1_file << "/" << tokens.size() << "), on the decoded weights "
                       << decoded / max_logit << " (top-1 at " << top1_decoded << "), on the folder "
                       << folder / max_logit << " (the type's rounding, not asserted)");
            CHECK(same <= tol_same);
            CHECK(decoded <= tol_decoded);
        }
    }
}

TEST_CASE("the inlay convert command", "[convert][cli]") {
    const fs::path tool = test::binary_dir() / "tools" / "inlay";
    INLAY_REQUIRE_FILE_OR_SKIP(tool);
    const fs::path dir = test::scratch_dir("convert_cli");
    test::write_tiny_hf_folder(dir / "folder", TinyHfOptions{});
    std::string out;
    const std::string inlay = "'" + tool.string() + "' convert ";
    CHECK(run(inlay + "'" + (dir / "folder").string() + "' '" + (dir / "m.gguf").string() + "' --type q8_0", dir,
              out) == 0);
    CHECK_THAT(out, Catch::Contains("wrote") && Catch::Contains("llama q8_0"));
    CHECK(fs::exists(dir / "m.gguf"));
    CHECK(run(inlay + "'" + (dir / "folder").string() + "' '" + (dir / "m.gguf").string() + "' --type q4_k", dir,
              out) == 0);
    CHECK_THAT(out, Catch::Contains("q8_0  rows of 64 are not a multiple of the q4_K block (256): q8_0 instead"));
    // Usage errors exit 2, library errors 1 with the status name.
    CHECK(run(inlay + "'" + (dir / "folder").string() + "'", dir, out) != 0);
    CHECK(WEXITSTATUS(std::system((inlay + "a b --type q3 > /dev/null 2>&1").c_str())) == 2);
    CHECK(WEXITSTATUS(std::system((inlay + "'" + (dir / "nope").string() + "' x.gguf > /dev/null 2>&1").c_str())) == 1);
    CHECK(run(inlay + "'" + (dir / "nope").string() + "' '" + (dir / "x.gguf").string() + "'", dir, out) != 0);
    CHECK_THAT(inlay::test::read_file(dir / "stderr.txt"), Catch::Contains("inlay: error: INLAY_ERR_IO"));
    CHECK(WEXITSTATUS(std::system((inlay + "--help > /dev/null").c_str())) == 0);
}
