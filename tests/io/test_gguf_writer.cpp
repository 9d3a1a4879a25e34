// GgufWriter: round trips through GgufFile, byte identity with an independent encoder
// (GgufBytes) and with the real files in testdata, argument checks, and llama.cpp
// reading what we write (tools/llamacpp's tools on llama.cpp's libraries).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>
#include <variant>

#include "core/error.h"
#include "io/gguf_reader.h"
#include "io/gguf_writer.h"
#include "support/gguf_fixtures.h"
#include "support/llamacpp.h"
#include "support/test_paths.h"

using namespace inlay;
using namespace inlay::test;
namespace fs = std::filesystem;

namespace {

std::vector<std::byte> as_bytes(const std::vector<float>& v) {
    std::vector<std::byte> out(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}

bool same_value(const MetadataValue& a, const MetadataValue& b) {
    if (a.type != b.type || a.value.index() != b.value.index()) return false;
    return std::visit(
        [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            const T& y = std::get<T>(b.value);
            if constexpr (std::is_same_v<T, MetadataArray>) {
                return x.elem_type == y.elem_type && x.ints == y.ints && x.floats == y.floats && x.strings == y.strings;
            } else {
                return x == y;
            }
        },
        a.value);
}

void require_same_metadata(const Metadata& a, const Metadata& b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        const auto& [ka, va] = a.entries()[i];
        const auto& [kb, vb] = b.entries()[i];
        INFO("key " << ka);
        CHECK(ka == kb);
        CHECK(same_value(va, vb));
    }
}

inlay_status status_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.status();
    }
    return INLAY_OK;
}

// Runs a command, returning its exit code and stdout (stderr to a file beside it).
int run(const std::string& cmd, const fs::path& dir, std::string& out) {
    const fs::path o = dir / "stdout.txt";
    const fs::path e = dir / "stderr.txt";
    const int rc = std::system((cmd + " > '" + o.string() + "' 2> '" + e.string() + "'").c_str());
    out = inlay::test::read_file(o);
    return rc;
}

}  // namespace

TEST_CASE("writer round trip: every value type and several tensor types", "[gguf][writer]") {
    GgufWriter w;
    w.add_metadata("u8", MetadataValue::from_int(ValueType::U8, 255));
    w.add_metadata("i8", MetadataValue::from_int(ValueType::I8, -128));
    w.add_metadata("u16", MetadataValue::from_int(ValueType::U16, 65535));
    w.add_metadata("i16", MetadataValue::from_int(ValueType::I16, -32768));
    w.add_metadata("u32", MetadataValue::from_int(ValueType::U32, 4294967295LL));
    w.add_metadata("i32", MetadataValue::from_int(ValueType::I32, std::numeric_limits<int32_t>::min()));
    w.add_metadata("u64", MetadataValue::from_u64(std::numeric_limits<uint64_t>::max()));
    w.add_metadata("i64", MetadataValue::from_int(ValueType::I64, std::numeric_limits<int64_t>::min()));
    w.add_metadata("f32", MetadataValue::from_float(ValueType::F32, 0.1f));
    w.add_metadata("f64", MetadataValue::from_float(ValueType::F64, 0.1));
    w.add_metadata("bool", MetadataValue::from_bool(true));
    w.add_metadata("string", MetadataValue::from_string(std::string("a\0b \xe2\x96\x81 c", 9)));
    w.add_metadata("empty_string", MetadataValue::from_string(""));
    w.add_metadata("arr.i32", MetadataValue::from_array({ValueType::I32, {-1, 0, 1, 2147483647}, {}, {}}));
    w.add_metadata("arr.u64", MetadataValue::from_array({ValueType::U64, {0, std::numeric_limits<int64_t>::max()}, {}, {}}));
    w.add_metadata("arr.bool", MetadataValue::from_array({ValueType::BOOL, {1, 0, 1}, {}, {}}));
    w.add_metadata("arr.f32", MetadataValue::from_array({ValueType::F32, {}, {-0.5, 1e-5f, 3.25}, {}}));
    w.add_metadata("arr.f64", MetadataValue::from_array({ValueType::F64, {}, {1e300, -2.5}, {}}));
    w.add_metadata("arr.str", MetadataValue::from_array({ValueType::STRING, {}, {}, {"", "x", "<0x0A>"}}));
    w.add_metadata("arr.empty", MetadataValue::from_array({ValueType::U8, {}, {}, {}}));

    const std::vector<float> f32{1.0f, -2.0f, 3.5f, 0.0f, 5.0f, 6.0f, 7.0f, 8.0f};
    w.add_tensor("t.f32", DType::F32, {4, 2}, as_bytes(f32));
    const std::vector<float> many = std::vector<float>(64, 0.25f);
    w.add_tensor("t.q8_0", DType::Q8_0, {32, 2}, encode_fixture_weights(DType::Q8_0, many));
    w.add_tensor("t.f16.3d", DType::F16, {2, 2, 2}, encode_fixture_weights(DType::F16, f32));
    w.add_tensor("t.empty", DType::F32, {0, 3}, {});
    w.add_tensor("t.4d", DType::BF16, {1, 2, 2, 2}, encode_fixture_weights(DType::BF16, f32));

    const std::vector<std::byte> bytes = w.to_bytes();
    CHECK(bytes.size() == w.file_size());
    auto f = GgufFile::from_bytes(bytes, "roundtrip");
    CHECK(f->version() == 3);
    CHECK(f->alignment() == 32);
    CHECK_FALSE(f->metadata().contains("general.alignment"));
    const Metadata& md = f->metadata();
    REQUIRE(md.size() == 20);
    CHECK(std::get<int64_t>(md.find("u8")->value) == 255);
    CHECK(std::get<int64_t>(md.find("i8")->value) == -128);
    CHECK(std::get<int64_t>(md.find("u32")->value) == 4294967295LL);
    CHECK(std::get<uint64_t>(md.find("u64")->value) == std::numeric_limits<uint64_t>::max());
    CHECK(std::get<int64_t>(md.find("i64")->value) == std::numeric_limits<int64_t>::min());
    CHECK(std::get<double>(md.find("f32")->value) == static_cast<double>(0.1f));
    CHECK(std::get<double>(md.find("f64")->value) == 0.1);
    CHECK(md.get_string("string") == std::string("a\0b \xe2\x96\x81 c", 9));
    CHECK(md.get_array("arr.f32").floats == std::vector<double>{-0.5, static_cast<double>(1e-5f), 3.25});
    CHECK(md.get_array("arr.u64").ints[1] == std::numeric_limits<int64_t>::max());
    CHECK(md.get_array("arr.bool").ints == std::vector<int64_t>{1, 0, 1});
    CHECK(md.get_string_array("arr.str") == std::vector<std::string>{"", "x", "<0x0A>"});
    CHECK(md.get_array("arr.empty").size() == 0);

    REQUIRE(f->tensors().size() == 5);
    const TensorView& t = f->require("t.f32");
    CHECK(t.ne == std::array<int64_t, 4>{4, 2, 1, 1});
    CHECK(std::memcmp(t.data, f32.data(), 32) == 0);
    CHECK(f->require("t.q8_0").nbytes == 68);
    CHECK(f->require("t.f16.3d").n_dims == 3);
    CHECK(f->require("t.empty").nbytes == 0);
    CHECK(f->require("t.4d").n_dims == 4);
    for (size_t i = 0; i < f->tensors().size(); ++i) CHECK(f->tensor_offset(i) % 32 == 0);

    // Writing what we read gives the same bytes.
    GgufWriter again;
    again.copy_metadata(md);
    for (const auto& v : f->tensors()) {
        again.add_tensor(v.name, v.type, std::vector<int64_t>(v.ne.begin(), v.ne.begin() + v.n_dims), {v.data, v.nbytes});
    }
    CHECK(again.to_bytes() == bytes);
}

TEST_CASE("writer output equals an independent hand encoding", "[gguf][writer]") {
    GgufWriter w(3, 64);
    w.add_metadata("general.architecture", MetadataValue::from_string("llama"));
    w.add_metadata("test.list", MetadataValue::from_array({ValueType::I32, {1, 2, 3}, {}, {}}));
    w.add_metadata("test.names", MetadataValue::from_array({ValueType::STRING, {}, {}, {"x", "yz"}}));
    const std::vector<float> a{1, 2, 3, 4, 5, 6, 7, 8};
    w.add_tensor("a", DType::F32, {4, 2}, as_bytes(a));
    w.add_tensor("b", DType::F32, {3}, as_bytes({9, 10, 11}));

    GgufBytes g;
    g.header(3, 2, 4).kv_string("general.architecture", "llama").kv_i32_array("test.list", {1, 2, 3});
    g.kv_string_array("test.names", {"x", "yz"}).kv_u32("general.alignment", 64);
    g.tensor_info("a", {4, 2}, 0, 0).tensor_info("b", {3}, 0, 64).pad_to(64);
    g.raw(as_bytes(a)).pad_to(64).raw(as_bytes({9, 10, 11}));
    CHECK(w.to_bytes() == g.bytes());

    auto f = GgufFile::from_bytes(w.to_bytes(), "aligned");
    CHECK(f->alignment() == 64);
    CHECK(f->data_offset() % 64 == 0);
    CHECK(f->tensor_offset(1) == 64);

    // Version 2 shares the layout.
    GgufWriter v2(2);
    v2.add_metadata("k", MetadataValue::from_int(ValueType::U32, 1));
    CHECK(GgufFile::from_bytes(v2.to_bytes(), "v2")->version() == 2);
    // No tensors: the file ends right after the KV section.
    GgufBytes vocab_only;
    vocab_only.header(2, 0, 1).kv_u32("k", 1);
    CHECK(v2.to_bytes() == vocab_only.bytes());
}

TEST_CASE("writer rejects bad arguments", "[gguf][writer]") {
    CHECK(status_of([] { GgufWriter w(1); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([] { GgufWriter w(3, 0); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([] { GgufWriter w(3, 48); }) == INLAY_ERR_INVALID_ARGUMENT);
    GgufWriter w;
    w.add_metadata("k", MetadataValue::from_int(ValueType::U8, 1));
    CHECK(status_of([&] { w.add_metadata("k", MetadataValue::from_int(ValueType::U8, 2)); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_metadata("", MetadataValue::from_int(ValueType::U8, 2)); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_metadata("x", MetadataValue::from_int(ValueType::U8, 256)); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_metadata("x", MetadataValue::from_int(ValueType::BOOL, 2)); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_metadata("x", MetadataValue::from_int(ValueType::U64, -1)); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_metadata("x", {ValueType::STRING, int64_t{1}}); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_metadata("x", MetadataValue::from_array({ValueType::ARRAY, {}, {}, {}})); }) ==
          INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_metadata("x", MetadataValue::from_array({ValueType::I8, {200}, {}, {}})); }) ==
          INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_metadata("general.alignment", MetadataValue::from_int(ValueType::U32, 64)); }) ==
          INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_metadata("general.alignment", MetadataValue::from_int(ValueType::U32, 32)); }) == INLAY_OK);
    const std::vector<std::byte> eight(8);
    CHECK(status_of([&] { w.add_tensor("t", DType::F32, {3}, eight); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_tensor("t", DType::F32, {}, eight); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_tensor("t", DType::F32, {1, 1, 1, 1, 2}, eight); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_tensor("t", DType::F32, {-2}, eight); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_tensor("t", DType::Q8_0, {16}, eight); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_tensor("", DType::F32, {2}, eight); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_tensor("t", DType::F32, {2}, eight); }) == INLAY_OK);
    CHECK(status_of([&] { w.add_tensor("t", DType::F32, {2}, eight); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(w.tensor_count() == 1);
    // The explicit general.alignment is written once, where it was added.
    auto f = GgufFile::from_bytes(w.to_bytes(), "explicit-alignment");
    CHECK(f->metadata().entries()[1].first == "general.alignment");
}

TEST_CASE("write_file writes atomically and reports IO errors", "[gguf][writer]") {
    const fs::path dir = scratch_dir("gguf_writer_file");
    GgufWriter w;
    w.add_metadata("k", MetadataValue::from_string("v"));
    w.add_tensor("t", DType::F32, {3}, as_bytes({1, 2, 3}));
    const fs::path path = dir / "out.gguf";
    w.write_file(path.string());
    const std::string on_disk = inlay::test::read_file(path);
    const auto expect = w.to_bytes();
    REQUIRE(on_disk.size() == expect.size());
    CHECK(std::memcmp(on_disk.data(), expect.data(), expect.size()) == 0);
    CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);  // no temp file left
    CHECK(GgufFile::open(path.string())->require("t").nbytes == 12);
    CHECK(status_of([&] { w.write_file((dir / "no" / "such" / "dir.gguf").string()); }) == INLAY_ERR_IO);
}

TEST_CASE("re-writing every testdata GGUF reproduces it byte for byte", "[gguf][writer]") {
    const fs::path root = test::testdata("");
    INLAY_REQUIRE_FILE_OR_SKIP(root);
    int n = 0;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
        if (entry.path().extension() != ".gguf") continue;
        INFO(entry.path().string());
        auto f = GgufFile::open(entry.path().string());
        GgufWriter w(f->version(), static_cast<uint32_t>(f->alignment()));
        w.copy_metadata(f->metadata());
        for (const auto& t : f->tensors()) {
            w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims), {t.data, t.nbytes});
        }
        const auto bytes = w.to_bytes();
        REQUIRE(bytes.size() == f->file_bytes());
        CHECK(std::memcmp(bytes.data(), f->bytes().data(), bytes.size()) == 0);
        require_same_metadata(GgufFile::from_bytes(bytes, "rewritten")->metadata(), f->metadata());
        ++n;
    }
    CHECK(n >= 20);
}

TEST_CASE("llama.cpp reads what the writer writes", "[gguf][writer][peer]") {
    INLAY_REQUIRE_LLAMACPP_OR_SKIP();
    const fs::path tokenize = llamacpp_tool("tokenize");
    const fs::path logits = llamacpp_tool("logits");
    const fs::path stories = test::testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(stories);
    const fs::path dir = scratch_dir("gguf_writer_peer");

    // stories260K rewritten with its tensors in reverse order (so the file differs from
    // the original) must tokenize and predict exactly as the original.
    auto f = GgufFile::open(stories.string());
    GgufWriter w;
    w.copy_metadata(f->metadata());
    for (auto it = f->tensors().rbegin(); it != f->tensors().rend(); ++it) {
        w.add_tensor(it->name, it->type, std::vector<int64_t>(it->ne.begin(), it->ne.begin() + it->n_dims),
                     {it->data, it->nbytes});
    }
    const fs::path rewritten = dir / "stories-reversed.gguf";
    w.write_file(rewritten.string());
    std::string ids_orig, ids_new, logits_orig, logits_new;
    const std::string tok_args = " 'Once upon a time'";
    REQUIRE(run("'" + tokenize.string() + "' '" + stories.string() + "'" + tok_args, dir, ids_orig) == 0);
    REQUIRE(run("'" + tokenize.string() + "' '" + rewritten.string() + "'" + tok_args, dir, ids_new) == 0);
    INFO("ids: " << ids_orig);
    CHECK(ids_orig.find('[') != std::string::npos);
    CHECK(ids_new == ids_orig);
    const std::string dump_args = " --tokens 1,403,407 --n 4 --k 5 --threads 1";
    REQUIRE(run("'" + logits.string() + "' '" + stories.string() + "'" + dump_args, dir, logits_orig) == 0);
    REQUIRE(run("'" + logits.string() + "' '" + rewritten.string() + "'" + dump_args, dir, logits_new) == 0);
    CHECK(logits_orig.find("generated_tokens") != std::string::npos);
    CHECK(logits_new == logits_orig);

    // The tiny-llama fixture is a model llama.cpp loads and runs. (Float types only: on
    // this machine the native logits_dump dies with SIGILL on any quantized file, even
    // llama.cpp's own llamacpp-refs ones; test_gguf_fixtures checks the quantized
    // encodings against llama-quantize instead.)
    for (DType type : {DType::F32, DType::F16, DType::BF16}) {
        INFO("fixture type " << dtype_name(type));
        TinyLlamaOptions o;
        o.weight_type = type;
        const fs::path path = dir / fmt::format("tiny-{}.gguf", dtype_name(type));
        const auto bytes = make_tiny_llama_gguf(o);
        std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                    static_cast<std::streamsize>(bytes.size()));
        std::string out;
        CHECK(run("'" + logits.string() + "' '" + path.string() + "' --prompt 'the tea' --n 2 --k 3 --threads 1", dir, out) == 0);
        CHECK(out.find("\"generated_tokens\"") != std::string::npos);
        CHECK(out.find("nan") == std::string::npos);
    }
}
