#include "support/safetensors_malformed.h"

#include <cstring>

namespace inlay::test {
namespace {

std::vector<std::byte> data_bytes(size_t n) {
    std::vector<std::byte> d(n);
    for (size_t i = 0; i < n; ++i) d[i] = static_cast<std::byte>(i * 7 + 1);
    return d;
}

const char* const kA = R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})";
const char* const kB = R"("b":{"dtype":"F16","shape":[4],"data_offsets":[24,32]})";

// A header with tensor "a" as given and the valid "b".
std::string with_a(const std::string& a_entry) {
    return "{" + a_entry + "," + kB + "}";
}

}  // namespace

std::vector<std::byte> safetensors_bytes(const std::string& header, const std::vector<std::byte>& data,
                                         int64_t declared_length) {
    const uint64_t n = declared_length < 0 ? header.size() : static_cast<uint64_t>(declared_length);
    std::vector<std::byte> out(8 + header.size());
    std::memcpy(out.data(), &n, 8);
    std::memcpy(out.data() + 8, header.data(), header.size());
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

std::vector<std::byte> valid_safetensors_file() {
    std::string header = std::string(R"({"__metadata__":{"format":"pt"},)") + kA + "," + kB + "}";
    header.resize((header.size() + 7) / 8 * 8, ' ');
    return safetensors_bytes(header, data_bytes(32));
}

std::vector<SafetensorsCase> malformed_safetensors_corpus() {
    std::vector<SafetensorsCase> c;
    const auto add = [&](std::string name, std::vector<std::byte> bytes, inlay_status status, std::string msg) {
        c.push_back({std::move(name), std::move(bytes), status, std::move(msg)});
    };
    const auto d32 = data_bytes(32);
    const auto header = [&](const std::string& h, size_t data = 32) { return safetensors_bytes(h, data_bytes(data)); };
    const auto entry_a = [&](const std::string& body) { return header(with_a(std::string(R"("a":)") + body)); };

    // The length prefix.
    add("empty_file", {}, INLAY_ERR_TRUNCATED, "8-byte header length");
    add("five_bytes", data_bytes(5), INLAY_ERR_TRUNCATED, "8-byte header length");
    add("header_past_end", safetensors_bytes(with_a(kA), d32, 4096), INLAY_ERR_TRUNCATED,
        "runs past the end of the file");
    add("header_length_huge", safetensors_bytes(with_a(kA), d32, int64_t{1} << 62), INLAY_ERR_BAD_FORMAT,
        "exceeds the format's limit");
    add("header_length_zero", safetensors_bytes("", d32), INLAY_ERR_BAD_FORMAT, "does not start with '{'");
    // The JSON text.
    add("header_is_array", header("[1, 2]"), INLAY_ERR_BAD_FORMAT, "does not start with '{'");
    add("header_leading_space", header(" " + with_a(kA)), INLAY_ERR_BAD_FORMAT, "does not start with '{'");
    add("json_cut_short", header(R"({"a":{"dtype":"F32")"), INLAY_ERR_BAD_FORMAT, "invalid JSON");
    add("json_trailing_garbage", header(with_a(kA) + "x"), INLAY_ERR_BAD_FORMAT, "invalid JSON");
    add("json_nul_padding", header(with_a(kA) + std::string(3, '\0')), INLAY_ERR_BAD_FORMAT, "invalid JSON");
    add("json_invalid_utf8",
        header("{\"a\xff\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}," + std::string(kB) + "}"),
        INLAY_ERR_BAD_FORMAT, "invalid JSON");
    add("json_too_deep", header(R"({"a":{"dtype":{"x":{"y":[1]}},"shape":[2,3],"data_offsets":[0,24]}})"),
        INLAY_ERR_BAD_FORMAT, "nested deeper");
    add("duplicate_tensor", header("{" + std::string(kA) + "," + kA + "}", 24), INLAY_ERR_BAD_FORMAT,
        "duplicate JSON key \"a\"");
    add("duplicate_field", entry_a(R"({"dtype":"F32","dtype":"F16","shape":[2,3],"data_offsets":[0,24]})"),
        INLAY_ERR_BAD_FORMAT, "duplicate JSON key \"dtype\"");
    add("empty_name", header(R"({"":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)" + std::string(kB) + "}"),
        INLAY_ERR_BAD_FORMAT, "empty tensor name");
    // Tensor entries.
    add("entry_not_object", entry_a("5"), INLAY_ERR_BAD_FORMAT, "tensor 'a': entry is a integer");
    add("no_dtype", entry_a(R"({"shape":[2,3],"data_offsets":[0,24]})"), INLAY_ERR_BAD_FORMAT,
        "tensor 'a': no \"dtype\"");
    add("dtype_not_string", entry_a(R"({"dtype":4,"shape":[2,3],"data_offsets":[0,24]})"), INLAY_ERR_BAD_FORMAT,
        "\"dtype\" is a integer");
    add("dtype_unknown", entry_a(R"({"dtype":"F7","shape":[2,3],"data_offsets":[0,24]})"), INLAY_ERR_UNSUPPORTED,
        "dtype \"F7\" is not supported");
    add("dtype_lowercase", entry_a(R"({"dtype":"f32","shape":[2,3],"data_offsets":[0,24]})"), INLAY_ERR_UNSUPPORTED,
        "dtype \"f32\"");
    add("no_shape", entry_a(R"({"dtype":"F32","data_offsets":[0,24]})"), INLAY_ERR_BAD_FORMAT, "no \"shape\"");
    add("shape_not_array", entry_a(R"({"dtype":"F32","shape":"2x3","data_offsets":[0,24]})"), INLAY_ERR_BAD_FORMAT,
        "\"shape\" is a string");
    add("shape_negative", entry_a(R"({"dtype":"F32","shape":[-2,-3],"data_offsets":[0,24]})"), INLAY_ERR_BAD_FORMAT,
        "shape entry -2 is not a non-negative integer");
    add("shape_fraction", entry_a(R"({"dtype":"F32","shape":[2.5,3],"data_offsets":[0,24]})"), INLAY_ERR_BAD_FORMAT,
        "shape entry 2.5");
    add("shape_string_dim", entry_a(R"({"dtype":"F32","shape":["2",3],"data_offsets":[0,24]})"), INLAY_ERR_BAD_FORMAT,
        "shape entry \"2\"");
    add("shape_overflow", entry_a(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,24]})"),
        INLAY_ERR_BAD_FORMAT, "overflows the byte count");
    add("shape_overflow_bytes", entry_a(R"({"dtype":"F64","shape":[2305843009213693952,2],"data_offsets":[0,24]})"),
        INLAY_ERR_BAD_FORMAT, "overflows the byte count");
    add("no_offsets", entry_a(R"({"dtype":"F32","shape":[2,3]})"), INLAY_ERR_BAD_FORMAT, "no \"data_offsets\"");
    add("offsets_three", entry_a(R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,12,24]})"), INLAY_ERR_BAD_FORMAT,
        "not an array of two integers");
    add("offsets_object", entry_a(R"({"dtype":"F32","shape":[2,3],"data_offsets":{"begin":0}})"), INLAY_ERR_BAD_FORMAT,
        "not an array of two integers");
    add("offsets_negative", entry_a(R"({"dtype":"F32","shape":[2,3],"data_offsets":[-24,0]})"), INLAY_ERR_BAD_FORMAT,
        "are not non-negative integers");
    add("offsets_beyond_i64", entry_a(R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,18446744073709551615]})"),
        INLAY_ERR_BAD_FORMAT, "are not non-negative integers");
    add("offsets_reversed", entry_a(R"({"dtype":"F32","shape":[2,3],"data_offsets":[24,0]})"), INLAY_ERR_BAD_FORMAT,
        "end before they begin");
    add("offsets_wrong_size", entry_a(R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,20]})"), INLAY_ERR_BAD_FORMAT,
        "hold 20 bytes, but shape [2, 3] of F32 needs 24");
    add("offsets_past_data", header(with_a(kA), 28), INLAY_ERR_TRUNCATED, "run past the end of the data (28 bytes)");
    add("data_cut_short", header(with_a(kA), 31), INLAY_ERR_TRUNCATED, "tensor 'b'");
    add("overlap",
        header(std::string(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)") +
                   R"("b":{"dtype":"F16","shape":[4],"data_offsets":[16,24]}})",
               24),
        INLAY_ERR_BAD_FORMAT, "overlaps tensor 'a'");
    add("gap",
        header(std::string(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)") +
                   R"("b":{"dtype":"F16","shape":[4],"data_offsets":[28,36]}})",
               36),
        INLAY_ERR_BAD_FORMAT, "4 unused bytes in the data section before tensor 'b'");
    add("trailing_bytes", header(with_a(kA), 40), INLAY_ERR_BAD_FORMAT, "8 bytes after the last tensor's data");
    add("metadata_not_object", header(std::string(R"({"__metadata__":["pt"],)") + kA + "," + kB + "}"),
        INLAY_ERR_BAD_FORMAT, "__metadata__ is a array");
    add("metadata_not_string", header(std::string(R"({"__metadata__":{"format":1},)") + kA + "," + kB + "}"),
        INLAY_ERR_BAD_FORMAT, "__metadata__ \"format\" is a integer");
    return c;
}

}  // namespace inlay::test
