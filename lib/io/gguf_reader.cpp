#include "io/gguf_reader.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>
#include <string_view>
#include <unordered_set>
#include <utility>

#include <fmt/ranges.h>

#include "core/error.h"
#include "core/utf8.h"

namespace inlay {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF is little-endian; big-endian hosts are unsupported");

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;
constexpr uint32_t kMaxValueType = static_cast<uint32_t>(ValueType::F64);
// Smallest tensor info (name length + 1 name byte + n_dims + 1 dim + type + offset):
// bounds how much to reserve for an untrusted tensor count.
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;

// Bytes of one encoded value of `type` (for strings: the minimum, an empty one).
uint64_t min_value_bytes(ValueType type) {
    switch (type) {
        case ValueType::U8: case ValueType::I8: case ValueType::BOOL: return 1;
        case ValueType::U16: case ValueType::I16: return 2;
        case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
        case ValueType::U64: case ValueType::I64: case ValueType::F64: case ValueType::STRING: return 8;
        case ValueType::ARRAY: return 4 + 8;
    }
    return 1;
}

// Reads little-endian fields from the file with bounds checks. `where` says what the
// parser is reading (the key or tensor and its index) so every message can name it.
class Cursor {
public:
    Cursor(std::span<const std::byte> bytes, const std::string& origin) : bytes_(bytes), origin_(origin) {}

    [[nodiscard]] size_t pos() const { return pos_; }
    [[nodiscard]] uint64_t remaining() const { return bytes_.size() - pos_; }
    [[nodiscard]] const std::string& origin() const { return origin_; }
    [[nodiscard]] const std::string& where() const { return where_; }
    void set_where(std::string where) { where_ = std::move(where); }

    template <class T>
    T read(std::string_view what) {
        if (remaining() < sizeof(T)) truncated(what, sizeof(T));
        T value;
        std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return value;
    }

    std::string read_string(std::string_view what) {
        if (remaining() < sizeof(uint64_t)) truncated(fmt::format("{} length", what), sizeof(uint64_t));
        const auto length = read<uint64_t>(what);
        if (length > remaining()) {
            fail(INLAY_ERR_TRUNCATED, "'{}': {}: {} of {} bytes runs past the end of the file (offset {}, file size {})",
                 origin_, where_, what, length, pos_, bytes_.size());
        }
        std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(length));
        pos_ += static_cast<size_t>(length);
        return s;
    }

    [[noreturn]] void truncated(std::string_view what, uint64_t need) const {
        fail(INLAY_ERR_TRUNCATED, "'{}': {}: file ends inside the {} (offset {}, needs {} bytes, file size {})",
             origin_, where_, what, pos_, need, bytes_.size());
    }

    template <class... Args>
    [[noreturn]] void bad(fmt::format_string<Args...> format, Args&&... args) const {
        fail(INLAY_ERR_BAD_FORMAT, "'{}': {}: {}", origin_, where_, fmt::format(format, std::forward<Args>(args)...));
    }

private:
    std::span<const std::byte> bytes_;
    const std::string& origin_;
    size_t pos_ = 0;
    std::string where_ = "header";
};

ValueType read_value_type(Cursor& in, std::string_view what) {
    const auto id = in.read<uint32_t>(what);
    if (id > kMaxValueType) in.bad("unknown value type {}", id);
    return static_cast<ValueType>(id);
}

// One scalar of an integer-like type, widened to int64_t (u64 through uint64_t).
int64_t read_bool(Cursor& in) {
    const auto b = in.read<uint8_t>("bool value");
    if (b > 1) in.bad("bool value is {} (must be 0 or 1)", b);
    return b;
}

MetadataArray read_array(Cursor& in) {
    MetadataArray array;
    const ValueType elem = read_value_type(in, "array element type");
    if (elem == ValueType::ARRAY) in.bad("nested arrays are not supported");
    array.elem_type = elem;
    const auto count = in.read<uint64_t>("array length");
    const uint64_t elem_bytes = min_value_bytes(elem);
    if (count > in.remaining() / elem_bytes) {
        fail(INLAY_ERR_TRUNCATED, "'{}': {}: array of {} {} elements runs past the end of the file (offset {}, {} bytes left)",
             in.origin(), in.where(), count, value_type_name(elem), in.pos(), in.remaining());
    }
    const auto n = static_cast<size_t>(count);
    switch (elem) {
        case ValueType::STRING:
            array.strings.reserve(n);
            for (size_t i = 0; i < n; ++i) array.strings.push_back(in.read_string("array string"));
            break;
        case ValueType::F32:
            array.floats.reserve(n);
            for (size_t i = 0; i < n; ++i) array.floats.push_back(in.read<float>("array element"));
            break;
        case ValueType::F64:
            array.floats.reserve(n);
            for (size_t i = 0; i < n; ++i) array.floats.push_back(in.read<double>("array element"));
            break;
        default:
            array.ints.reserve(n);
            for (size_t i = 0; i < n; ++i) {
                switch (elem) {
                    case ValueType::U8: array.ints.push_back(in.read<uint8_t>("array element")); break;
                    case ValueType::I8: array.ints.push_back(in.read<int8_t>("array element")); break;
                    case ValueType::U16: array.ints.push_back(in.read<uint16_t>("array element")); break;
                    case ValueType::I16: array.ints.push_back(in.read<int16_t>("array element")); break;
                    case ValueType::U32: array.ints.push_back(in.read<uint32_t>("array element")); break;
                    case ValueType::I32: array.ints.push_back(in.read<int32_t>("array element")); break;
                    case ValueType::I64: array.ints.push_back(in.read<int64_t>("array element")); break;
                    case ValueType::BOOL: array.ints.push_back(read_bool(in)); break;
                    case ValueType::U64: {
                        const auto v = in.read<uint64_t>("array element");
                        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                            in.bad("u64 array element {} is {}, above the supported maximum {}", i, v,
                                   std::numeric_limits<int64_t>::max());
                        }
                        array.ints.push_back(static_cast<int64_t>(v));
                        break;
                    }
                    default: in.bad("internal: unexpected array element type");
                }
            }
            break;
    }
    return array;
}

MetadataValue read_value(Cursor& in, ValueType type) {
    switch (type) {
        case ValueType::U8: return MetadataValue::from_int(type, in.read<uint8_t>("value"));
        case ValueType::I8: return MetadataValue::from_int(type, in.read<int8_t>("value"));
        case ValueType::U16: return MetadataValue::from_int(type, in.read<uint16_t>("value"));
        case ValueType::I16: return MetadataValue::from_int(type, in.read<int16_t>("value"));
        case ValueType::U32: return MetadataValue::from_int(type, in.read<uint32_t>("value"));
        case ValueType::I32: return MetadataValue::from_int(type, in.read<int32_t>("value"));
        case ValueType::I64: return MetadataValue::from_int(type, in.read<int64_t>("value"));
        case ValueType::U64: return MetadataValue::from_u64(in.read<uint64_t>("value"));
        case ValueType::F32: return MetadataValue::from_float(type, in.read<float>("value"));
        case ValueType::F64: return MetadataValue::from_float(type, in.read<double>("value"));
        case ValueType::BOOL: return MetadataValue::from_bool(read_bool(in) != 0);
        case ValueType::STRING: return MetadataValue::from_string(in.read_string("string value"));
        case ValueType::ARRAY: return MetadataValue::from_array(read_array(in));
    }
    in.bad("unknown value type {}", static_cast<uint32_t>(type));
}

// The tensor's element count and byte size; BAD_FORMAT on overflow or a partial block.
void size_tensor(Cursor& in, TensorView& t) {
    int64_t elems = 1;
    for (int i = 0; i < t.n_dims; ++i) {
        if (t.ne[static_cast<size_t>(i)] != 0 && elems > std::numeric_limits<int64_t>::max() / t.ne[static_cast<size_t>(i)]) {
            in.bad("element count overflows (dims {})", fmt::join(t.ne.begin(), t.ne.begin() + t.n_dims, " x "));
        }
        elems *= t.ne[static_cast<size_t>(i)];
    }
    const auto& traits = dtype_traits(t.type);
    if (t.ne[0] % traits.block_elems != 0) {
        in.bad("ne[0] = {} is not a multiple of the {} block size {}", t.ne[0], traits.name, traits.block_elems);
    }
    const auto row = row_bytes(t.type, t.ne[0]);
    const uint64_t rows = static_cast<uint64_t>(t.ne[0] == 0 ? 0 : elems / t.ne[0]);
    if (!row || (rows != 0 && *row > std::numeric_limits<size_t>::max() / rows)) {
        in.bad("byte size overflows (dims {}, type {})", fmt::join(t.ne.begin(), t.ne.begin() + t.n_dims, " x "),
               traits.name);
    }
    // A tensor with ne[0] == 0 but other dims non-zero still has 0 bytes.
    t.nbytes = static_cast<size_t>(*row * rows);
}

}  // namespace

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
    std::unique_ptr<GgufFile> file(new GgufFile());
    file->origin_ = path;
    auto& mapped = file->storage_.emplace<MappedFile>(path);
    file->bytes_ = mapped.bytes();
    file->parse();
    return file;
}

std::unique_ptr<GgufFile> GgufFile::from_bytes(std::vector<std::byte> bytes, std::string origin) {
    std::unique_ptr<GgufFile> file(new GgufFile());
    file->origin_ = std::move(origin);
    auto& owned = file->storage_.emplace<std::vector<std::byte>>(std::move(bytes));
    file->bytes_ = std::span<const std::byte>(owned.data(), owned.size());
    file->parse();
    return file;
}

void GgufFile::parse() {
    Cursor in(bytes_, origin_);

    const auto magic = in.read<uint32_t>("magic");
    if (magic != kMagic) {
        in.bad("bad magic 0x{:08x} (not a GGUF file)", magic);
    }
    version_ = in.read<uint32_t>("version");
    if (version_ != 2 && version_ != 3) {
        const bool swapped = version_ == 0x02000000u || version_ == 0x03000000u;
        fail(INLAY_ERR_UNSUPPORTED, "'{}': GGUF version {} is not supported (only 2 and 3){}", origin_, version_,
             swapped ? "; this looks like a big-endian file" : "");
    }
    const auto tensor_count = in.read<uint64_t>("tensor count");
    const auto kv_count = in.read<uint64_t>("kv count");
    // Counts are not checked up front: every entry consumes bytes, so parsing runs
    // into the end of the file (naming the entry where it ends) long before a huge
    // count could cost time, and nothing is reserved beyond what the bytes can hold.

    for (uint64_t i = 0; i < kv_count; ++i) {
        in.set_where(fmt::format("key #{}", i));
        std::string key = in.read_string("key");
        if (key.empty()) in.bad("empty key name");
        in.set_where(fmt::format("key #{} {}", i, utf8::quoted(key, '\'')));  // names are bytes
        const ValueType type = read_value_type(in, "value type");
        MetadataValue value = read_value(in, type);
        if (metadata_.contains(key)) in.bad("duplicate key");
        metadata_.add(std::move(key), std::move(value));
    }

    if (const MetadataValue* a = metadata_.find("general.alignment")) {
        in.set_where("key 'general.alignment'");
        if (a->type != ValueType::U32) in.bad("must be a u32, not {}", value_type_name(a->type));
        const auto v = static_cast<uint64_t>(std::get<int64_t>(a->value));
        if (v == 0 || !std::has_single_bit(v)) in.bad("{} is not a power of two", v);
        alignment_ = v;
    } else {
        alignment_ = kDefaultAlignment;
    }

    const auto reserve = static_cast<size_t>(std::min<uint64_t>(tensor_count, in.remaining() / kMinTensorInfoBytes));
    tensors_.reserve(reserve);
    offsets_.reserve(reserve);
    std::unordered_set<std::string> names;
    for (uint64_t i = 0; i < tensor_count; ++i) {
        in.set_where(fmt::format("tensor #{}", i));
        TensorView t;
        t.name = in.read_string("tensor name");
        if (t.name.empty()) in.bad("empty tensor name");
        in.set_where(fmt::format("tensor #{} {}", i, utf8::quoted(t.name, '\'')));
        if (!names.insert(t.name).second) in.bad("duplicate tensor name");
        const auto n_dims = in.read<uint32_t>("n_dims");
        if (n_dims == 0 || n_dims > kMaxDims) in.bad("n_dims is {} (must be 1..{})", n_dims, kMaxDims);
        t.n_dims = static_cast<int>(n_dims);
        for (uint32_t d = 0; d < n_dims; ++d) {
            const auto dim = in.read<uint64_t>("dims");
            if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                in.bad("dim {} is negative ({})", d, static_cast<int64_t>(dim));
            }
            t.ne[d] = static_cast<int64_t>(dim);
        }
        const auto type_id = in.read<uint32_t>("tensor type");
        const auto dtype = dtype_from_id(type_id);
        if (!dtype) {
            fail(INLAY_ERR_UNSUPPORTED, "'{}': {}: ggml tensor type {} ({}) is not supported", origin_, in.where(),
                 type_id, ggml_type_name(type_id));
        }
        t.type = *dtype;
        size_tensor(in, t);
        const auto offset = in.read<uint64_t>("tensor data offset");
        if (offset % alignment_ != 0) in.bad("data offset {} is not a multiple of the alignment {}", offset, alignment_);
        offsets_.push_back(offset);
        tensors_.push_back(std::move(t));
    }

    const uint64_t header_end = in.pos();
    const uint64_t aligned = (header_end + alignment_ - 1) / alignment_ * alignment_;
    const uint64_t size = bytes_.size();
    if (tensors_.empty()) {
        data_offset_ = std::min(aligned, size);
        build_index();
        return;
    }
    if (aligned > size) {
        fail(INLAY_ERR_TRUNCATED, "'{}': file ends inside the padding before the tensor data (offset {}, file size {})",
             origin_, aligned, size);
    }
    data_offset_ = aligned;
    const uint64_t data_bytes = size - data_offset_;
    for (size_t i = 0; i < tensors_.size(); ++i) {
        TensorView& t = tensors_[i];
        const uint64_t offset = offsets_[i];
        if (offset > data_bytes || t.nbytes > data_bytes - offset) {
            fail(INLAY_ERR_TRUNCATED,
                 "'{}': tensor #{} {}: data [{}, +{}) runs past the end of the file (data section of {} bytes at {})",
                 origin_, i, utf8::quoted(t.name, '\''), offset, t.nbytes, data_bytes, data_offset_);
        }
        t.data = bytes_.data() + data_offset_ + offset;
        t.file_backed = std::holds_alternative<MappedFile>(storage_);
    }

    std::vector<size_t> order(tensors_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return offsets_[a] != offsets_[b] ? offsets_[a] < offsets_[b] : tensors_[a].nbytes < tensors_[b].nbytes;
    });
    for (size_t k = 1; k < order.size(); ++k) {
        const size_t a = order[k - 1];
        const size_t b = order[k];
        if (offsets_[a] + tensors_[a].nbytes > offsets_[b]) {
            fail(INLAY_ERR_BAD_FORMAT, "'{}': tensor #{} {} (data [{}, +{})) overlaps tensor #{} {} (data [{}, +{}))",
                 origin_, b, utf8::quoted(tensors_[b].name, '\''), offsets_[b], tensors_[b].nbytes, a,
                 utf8::quoted(tensors_[a].name, '\''), offsets_[a],
                 tensors_[a].nbytes);
        }
    }
    build_index();
}

}  // namespace inlay
