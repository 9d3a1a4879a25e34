// safetensors reader and writer: files built byte by byte here (the format definition
// in formats.md), round trips through the writer, zero-copy views, sharded folders and
// their index, the malformed corpus and truncation sweeps.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/safetensors_reader.h"
#include "io/safetensors_writer.h"
#include "support/safetensors_malformed.h"
#include "support/test_paths.h"

using namespace inlay;
namespace fs = std::filesystem;

namespace {

template <class F>
inlay_status status_of(F&& fn, std::string* message = nullptr) {
    try {
        fn();
    } catch (const Error& e) {
        if (message) *message = e.what();
        return e.status();
    }
    return INLAY_OK;
}

void write_bytes(const fs::path& p, const std::vector<std::byte>& b) {
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void write_text(const fs::path& p, const std::string& s) {
    std::ofstream(p, std::ios::binary) << s;
}

template <class T>
std::vector<std::byte> as_bytes(const std::vector<T>& v) {
    std::vector<std::byte> b(v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
}

}  // namespace

TEST_CASE("a hand-built safetensors file reads as the format defines it", "[safetensors]") {
    const auto bytes = test::valid_safetensors_file();
    auto f = SafetensorsFile::from_bytes(bytes, "hand-built");
    REQUIRE(f->tensors().size() == 2);
    REQUIRE(f->metadata().size() == 1);
    CHECK(f->metadata()[0] == std::pair<std::string, std::string>("format", "pt"));
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    CHECK(f->header_size() == n);
    const StTensor* a = f->find("a");
    const StTensor* b = f->find("b");
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->dtype == StDType::F32);
    CHECK(a->shape == std::vector<int64_t>{2, 3});
    CHECK(a->data.size() == 24);
    CHECK(a->data.data() == f->bytes().data() + 8 + n);  // offsets count from the end of the header
    CHECK(b->dtype == StDType::F16);
    CHECK(b->data.data() == f->bytes().data() + 8 + n + 24);
    CHECK(static_cast<int>(b->data[0]) == 24 * 7 + 1);

    // As a WeightSource: ggml dimension order (the shape reversed), zero-copy.
    std::vector<std::unique_ptr<SafetensorsFile>> files;
    files.push_back(std::move(f));
    auto src = SafetensorsSource::from_files(std::move(files), "hand-built");
    const TensorView& va = src->require("a");
    CHECK(va.type == DType::F32);
    CHECK(va.n_dims == 2);
    CHECK(va.ne[0] == 3);
    CHECK(va.ne[1] == 2);
    CHECK(va.data == a->data.data());
    CHECK(src->require("b").ne[0] == 4);
    CHECK(src->copied_tensors() == 0);
    CHECK(src->metadata().get_string("format") == "pt");
}

TEST_CASE("writer output: header layout, alignment and a byte-exact round trip", "[safetensors][writer]") {
    const std::vector<float> f32{1.5f, -2.0f, 0.25f, 3.0f, 4.0f, 5.0f};
    const std::vector<uint16_t> f16{0x3c00, 0xc000, 0x0001};  // 1, -2, smallest subnormal
    const std::vector<uint16_t> bf16{0x3f80, 0x4049};         // 1, 3.140625
    const std::vector<int32_t> i32{7, -9};
    const std::vector<uint8_t> u8{1, 2, 3};
    SafetensorsWriter w;
    w.add_metadata("format", "pt");
    w.add_metadata("format", "np");  // replaces
    w.add_tensor("odd.f16", StDType::F16, {3}, as_bytes(f16));
    w.add_tensor("m.f32", StDType::F32, {2, 3}, as_bytes(f32));
    w.add_tensor("m.bf16", StDType::BF16, {1, 2}, as_bytes(bf16));
    w.add_tensor("ids", StDType::I32, {2}, as_bytes(i32));
    w.add_tensor("bytes", StDType::U8, {3}, as_bytes(u8));
    w.add_tensor("scalar", StDType::F32, {}, as_bytes(std::vector<float>{42.0f}));
    w.add_tensor("empty", StDType::F32, {0, 4}, {});
    const auto bytes = w.to_bytes();

    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    CHECK((8 + n) % 8 == 0);
    const auto header = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(bytes.data()) + 8, n));
    CHECK(header["__metadata__"]["format"] == "np");
    CHECK(header["m.f32"]["dtype"] == "F32");
    CHECK(header["m.f32"]["shape"] == nlohmann::json::array({2, 3}));
    CHECK(header["scalar"]["shape"] == nlohmann::json::array());

    auto f = SafetensorsFile::from_bytes(bytes, "written");
    REQUIRE(f->tensors().size() == 7);
    for (const auto& t : f->tensors()) {
        INFO(t.name);
        CHECK(static_cast<size_t>(t.data.data() - f->bytes().data()) % st_dtype_size(t.dtype) == 0);
    }
    CHECK(std::memcmp(f->find("m.f32")->data.data(), f32.data(), 24) == 0);
    CHECK(std::memcmp(f->find("odd.f16")->data.data(), f16.data(), 6) == 0);
    CHECK(std::memcmp(f->find("m.bf16")->data.data(), bf16.data(), 4) == 0);
    CHECK(std::memcmp(f->find("ids")->data.data(), i32.data(), 8) == 0);
    CHECK(f->find("scalar")->n_elements() == 1);
    CHECK(f->find("empty")->data.empty());

    std::vector<std::unique_ptr<SafetensorsFile>> files;
    files.push_back(std::move(f));
    auto src = SafetensorsSource::from_files(std::move(files), "written");
    // Views only for float tensors of 1..4 dims; everything stays in entries().
    CHECK(src->entries().size() == 7);
    CHECK(src->find("ids") == nullptr);
    CHECK(src->find("scalar") == nullptr);
    CHECK(src->find_entry("ids") != nullptr);
    CHECK(src->require("m.bf16").type == DType::BF16);
    CHECK(src->require("empty").n_elements() == 0);

    // Re-writing what was read reproduces the file.
    SafetensorsWriter again;
    again.add_metadata("format", "np");
    for (const char* name : {"odd.f16", "m.f32", "m.bf16", "ids", "bytes", "scalar", "empty"}) {
        const StTensor* t = src->find_entry(name);
        again.add_tensor(t->name, t->dtype, t->shape, t->data);
    }
    CHECK(again.to_bytes() == bytes);
}

TEST_CASE("safetensors writer rejects bad arguments", "[safetensors][writer]") {
    SafetensorsWriter w;
    const auto four = as_bytes(std::vector<float>{1, 2, 3, 4});
    CHECK(status_of([&] { w.add_tensor("", StDType::F32, {4}, four); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_tensor("__metadata__", StDType::F32, {4}, four); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_tensor("x", StDType::F32, {5}, four); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.add_tensor("x", StDType::F32, {-4}, four); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] {
              w.add_tensor("x", StDType::F32, {int64_t{1} << 62, 8}, four);
          }) == INLAY_ERR_INVALID_ARGUMENT);
    w.add_tensor("x", StDType::F32, {2, 2}, four);
    CHECK(status_of([&] { w.add_tensor("x", StDType::F32, {4}, four); }) == INLAY_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { w.write_file("/nonexistent-dir/x.safetensors"); }) == INLAY_ERR_IO);
}

TEST_CASE("files are mapped zero-copy; misaligned data is copied once", "[safetensors]") {
    const fs::path dir = test::scratch_dir("safetensors_mmap");
    SafetensorsWriter w;
    std::vector<float> big(1000);
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.5f;
    w.add_tensor("big", StDType::F32, {10, 100}, as_bytes(big));
    w.write_file((dir / "model.safetensors").string());
    auto src = SafetensorsSource::open(dir.string());
    const TensorView& v = src->require("big");
    const auto& file = *src->files().at(0);
    CHECK(v.data >= file.bytes().data());
    CHECK(v.data + v.nbytes <= file.bytes().data() + file.bytes().size());
    CHECK(src->copied_tensors() == 0);
    CHECK(reinterpret_cast<const float*>(v.data)[999] == 499.5f);
    CHECK(src->file_bytes() == fs::file_size(dir / "model.safetensors"));

    // An F16 tensor of odd length placed first leaves the F32 after it 2 bytes off.
    const std::string header = R"({"h":{"dtype":"F16","shape":[3],"data_offsets":[0,6]},)"
                               R"("f":{"dtype":"F32","shape":[2],"data_offsets":[6,14]}})";
    std::string padded = header;
    padded.resize((padded.size() + 7) / 8 * 8, ' ');
    std::vector<std::byte> data(14);
    const float two[2] = {1.25f, -7.5f};
    std::memcpy(data.data() + 6, two, 8);
    std::vector<std::unique_ptr<SafetensorsFile>> files;
    files.push_back(SafetensorsFile::from_bytes(test::safetensors_bytes(padded, data), "misaligned"));
    auto m = SafetensorsSource::from_files(std::move(files), "misaligned");
    CHECK(m->copied_tensors() == 1);
    const TensorView& f = m->require("f");
    CHECK(reinterpret_cast<uintptr_t>(f.data) % 4 == 0);
    float got[2];
    std::memcpy(got, f.data, 8);
    CHECK(got[0] == 1.25f);
    CHECK(got[1] == -7.5f);
}

TEST_CASE("sharded folders: index, shards and the same tensors as one file", "[safetensors][sharded]") {
    const fs::path dir = test::scratch_dir("safetensors_sharded");
    SafetensorsWriter w;
    for (int i = 0; i < 7; ++i) {
        std::vector<float> v(static_cast<size_t>(16 * (i + 1)));
        for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(i * 1000 + static_cast<int>(k));
        w.add_tensor(fmt::format("t{}", i), StDType::F32, {i + 1, 16}, as_bytes(v));
    }
    const auto shards = w.write_sharded(dir.string(), 200);
    CHECK(shards.size() >= 3);
    CHECK(shards.front() == fmt::format("model-00001-of-{:05}.safetensors", shards.size()));
    const auto index = nlohmann::json::parse(std::ifstream(dir / "model.safetensors.index.json"));
    CHECK(index["weight_map"].size() == 7);
    CHECK(index["metadata"]["total_size"] == 16 * 4 * (1 + 2 + 3 + 4 + 5 + 6 + 7));

    const fs::path single = dir / "single.safetensors";
    w.write_file(single.string());
    auto a = SafetensorsSource::open(dir.string());  // the folder: index preferred
    auto b = SafetensorsSource::open(single.string());
    auto c = SafetensorsSource::open((dir / "model.safetensors.index.json").string());
    CHECK(a->files().size() == shards.size());
    REQUIRE(a->tensors().size() == 7);
    REQUIRE(c->tensors().size() == 7);
    for (const TensorView& t : b->tensors()) {
        const TensorView& s = a->require(t.name);
        CHECK(s.ne == t.ne);
        REQUIRE(s.nbytes == t.nbytes);
        CHECK(std::memcmp(s.data, t.data, t.nbytes) == 0);
    }
}

TEST_CASE("sharded folders: a bad index or shard names what is wrong", "[safetensors][sharded][malformed]") {
    const fs::path dir = test::scratch_dir("safetensors_bad_index");
    SafetensorsWriter w1, w2;
    const auto four = as_bytes(std::vector<float>{1, 2, 3, 4});
    w1.add_tensor("x", StDType::F32, {4}, four);
    w2.add_tensor("y", StDType::F32, {4}, four);
    w1.write_file((dir / "s1.safetensors").string());
    w2.write_file((dir / "s2.safetensors").string());
    SafetensorsWriter both;
    both.add_tensor("x", StDType::F32, {4}, four);
    both.add_tensor("y", StDType::F32, {4}, four);
    both.write_file((dir / "both.safetensors").string());
    write_bytes(dir / "bad.safetensors", {std::byte{1}, std::byte{2}});

    struct Case {
        const char* name;
        std::string index;
        inlay_status status;
        const char* message;
    };
    const std::vector<Case> cases = {
        {"valid", R"({"weight_map":{"x":"s1.safetensors","y":"s2.safetensors"}})", INLAY_OK, ""},
        {"not_json", R"({"weight_map":)", INLAY_ERR_BAD_FORMAT, "invalid JSON"},
        {"not_object", R"(["s1.safetensors"])", INLAY_ERR_BAD_FORMAT, "not a JSON object"},
        {"no_map", R"({"metadata":{}})", INLAY_ERR_BAD_FORMAT, "no \"weight_map\""},
        {"map_not_object", R"({"weight_map":["s1.safetensors"]})", INLAY_ERR_BAD_FORMAT, "\"weight_map\" is a array"},
        {"shard_not_string", R"({"weight_map":{"x":1}})", INLAY_ERR_BAD_FORMAT, "entry 'x' is a integer"},
        {"path_traversal", R"({"weight_map":{"x":"../s1.safetensors"}})", INLAY_ERR_BAD_FORMAT,
         "is not a file name in the same folder"},
        {"absolute_path", R"({"weight_map":{"x":"/etc/passwd"}})", INLAY_ERR_BAD_FORMAT, "not a file name"},
        {"dot_dot", R"({"weight_map":{"x":".."}})", INLAY_ERR_BAD_FORMAT, "not a file name"},
        {"empty_name", R"({"weight_map":{"x":""}})", INLAY_ERR_BAD_FORMAT, "not a file name"},
        {"missing_shard", R"({"weight_map":{"x":"s9.safetensors"}})", INLAY_ERR_IO, "shard 's9.safetensors'"},
        {"tensor_not_in_shard", R"({"weight_map":{"x":"s1.safetensors","z":"s1.safetensors"}})", INLAY_ERR_MISSING,
         "tensor 'z' is not in shard 's1.safetensors'"},
        {"unlisted_tensor", R"({"weight_map":{"x":"both.safetensors"}})", INLAY_ERR_BAD_FORMAT,
         "tensor 'y' is in shard 'both.safetensors' but the index does not list it"},
        {"two_homes", R"({"weight_map":{"x":"both.safetensors","y":"s2.safetensors"}})", INLAY_ERR_BAD_FORMAT,
         "but the index assigns it to 's2.safetensors'"},
        {"bad_shard", R"({"weight_map":{"x":"bad.safetensors"}})", INLAY_ERR_TRUNCATED, "bad.safetensors"},
        {"duplicate_key", R"({"weight_map":{"x":"s1.safetensors","x":"s1.safetensors"}})", INLAY_ERR_BAD_FORMAT,
         "duplicate JSON key \"x\""},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        write_text(dir / "model.safetensors.index.json", c.index);
        std::string message;
        const auto status = status_of([&] { (void)SafetensorsSource::open(dir.string()); }, &message);
        INFO(message);
        CHECK(status == c.status);
        CHECK_THAT(message, Catch::Contains(c.message));
    }
    fs::remove(dir / "model.safetensors.index.json");
    std::string message;
    CHECK(status_of([&] { (void)SafetensorsSource::open(dir.string()); }, &message) == INLAY_ERR_MISSING);
    CHECK_THAT(message, Catch::Contains("holds neither model.safetensors.index.json nor model.safetensors"));
    CHECK(status_of([&] { (void)SafetensorsSource::open((dir / "nope.safetensors").string()); }) == INLAY_ERR_IO);
}

TEST_CASE("every malformed safetensors file gives its status and message", "[safetensors][malformed]") {
    const auto corpus = test::malformed_safetensors_corpus();
    CHECK(corpus.size() >= 20);
    for (const auto& c : corpus) {
        INFO("case " << c.name);
        std::string message;
        const auto status =
            status_of([&] { (void)SafetensorsFile::from_bytes(c.bytes, "case.safetensors"); }, &message);
        INFO("message: " << message);
        CHECK(status == c.expected);
        CHECK_THAT(message, Catch::Contains(c.message_contains));
        CHECK_THAT(message, Catch::Contains("case.safetensors"));
    }
}

TEST_CASE("truncating a valid file anywhere gives an error, never a crash", "[safetensors][malformed]") {
    const auto bytes = test::valid_safetensors_file();
    REQUIRE(status_of([&] { (void)SafetensorsFile::from_bytes(bytes, "full"); }) == INLAY_OK);
    for (size_t n = 0; n < bytes.size(); ++n) {
        INFO("first " << n << " bytes");
        const std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
        const auto status = status_of([&] { (void)SafetensorsFile::from_bytes(cut, "cut"); });
        CHECK((status == INLAY_ERR_TRUNCATED || status == INLAY_ERR_BAD_FORMAT));
    }
    // Every single-byte corruption of the header is either still valid or rejected cleanly.
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    int rejected = 0;
    for (size_t i = 0; i < 8 + n; ++i) {
        for (const int delta : {1, 0x80}) {
            auto broken = bytes;
            broken[i] = static_cast<std::byte>(static_cast<int>(broken[i]) ^ delta);
            const auto status = status_of([&] { (void)SafetensorsFile::from_bytes(broken, "flip"); });
            CHECK((status == INLAY_OK || status == INLAY_ERR_TRUNCATED || status == INLAY_ERR_BAD_FORMAT ||
                   status == INLAY_ERR_UNSUPPORTED));
            rejected += status != INLAY_OK;
        }
    }
    CHECK(rejected > static_cast<int>(n));
}

TEST_CASE("dtype tables follow the format", "[safetensors]") {
    const std::pair<const char*, size_t> expected[] = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
        {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
    for (const auto& [name, size] : expected) {
        const auto t = st_dtype_from_name(name);
        REQUIRE(t);
        CHECK(st_dtype_name(*t) == name);
        CHECK(st_dtype_size(*t) == size);
    }
    CHECK_FALSE(st_dtype_from_name("Q4_0"));
    CHECK(st_dtype_to_dtype(StDType::BF16) == DType::BF16);
    CHECK_FALSE(st_dtype_to_dtype(StDType::I32));
    CHECK(st_dtype_from_dtype(DType::F16) == StDType::F16);
    CHECK_FALSE(st_dtype_from_dtype(DType::Q8_0));
}
