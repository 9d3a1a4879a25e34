#include "runtime/session_file.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/utf8.h"
#include "tokenizer/tokenizer.h"

namespace inlay {
namespace {

static_assert(std::endian::native == std::endian::little, "session files are written little-endian");

constexpr char kMagic[8] = {'I', 'N', 'L', 'A', 'Y', 'S', 'E', 'S'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 128;
constexpr size_t kHeaderChecked = 120;

struct Header {
    uint64_t model_hash = 0, vocab_hash = 0, weights_hash = 0;
    uint32_t n_layers = 0, n_kv_heads = 0, head_dim = 0, block_size = 0, kv_dtype = 0, n_vocab = 0;
    uint64_t block_bytes = 0, n_tokens = 0, n_cached = 0, n_blocks = 0, payload_checksum = 0;
    char architecture[16] = {};
};

uint64_t mix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

class Hasher {
public:
    void add(uint64_t v) { h_ = mix64(h_ ^ (v + 0x9e3779b97f4a7c15ull + (h_ << 6))); }
    void add(std::string_view s) {
        add(s.size());
        add_bytes(std::as_bytes(std::span<const char>(s.data(), s.size())));
    }
    void add_bytes(std::span<const std::byte> b) { h_ = checksum64(b, h_); }
    void add_float(float f) { add(std::bit_cast<uint32_t>(f)); }
    [[nodiscard]] uint64_t value() const { return h_; }

private:
    uint64_t h_ = 0x1f3d5b79a2c4e687ull;
};

template <class T>
void put(std::byte* at, T v) {
    std::memcpy(at, &v, sizeof v);
}

template <class T>
T get(const std::byte* at) {
    T v;
    std::memcpy(&v, at, sizeof v);
    return v;
}

void encode(const Header& h, std::byte* out) {
    std::memset(out, 0, kHeaderBytes);
    std::memcpy(out, kMagic, 8);
    put<uint32_t>(out + 8, kVersion);
    put<uint32_t>(out + 12, static_cast<uint32_t>(kHeaderBytes));
    put(out + 16, h.model_hash);
    put(out + 24, h.vocab_hash);
    put(out + 32, h.weights_hash);
    put(out + 40, h.n_layers);
    put(out + 44, h.n_kv_heads);
    put(out + 48, h.head_dim);
    put(out + 52, h.block_size);
    put(out + 56, h.kv_dtype);
    put(out + 60, h.n_vocab);
    put(out + 64, h.block_bytes);
    put(out + 72, h.n_tokens);
    put(out + 80, h.n_cached);
    put(out + 88, h.n_blocks);
    put(out + 96, h.payload_checksum);
    std::memcpy(out + 104, h.architecture, 16);
    put(out + 120, checksum64(std::span<const std::byte>(out, kHeaderChecked), 0));
}

Header decode(const std::byte* in) {
    Header h;
    h.model_hash = get<uint64_t>(in + 16);
    h.vocab_hash = get<uint64_t>(in + 24);
    h.weights_hash = get<uint64_t>(in + 32);
    h.n_layers = get<uint32_t>(in + 40);
    h.n_kv_heads = get<uint32_t>(in + 44);
    h.head_dim = get<uint32_t>(in + 48);
    h.block_size = get<uint32_t>(in + 52);
    h.kv_dtype = get<uint32_t>(in + 56);
    h.n_vocab = get<uint32_t>(in + 60);
    h.block_bytes = get<uint64_t>(in + 64);
    h.n_tokens = get<uint64_t>(in + 72);
    h.n_cached = get<uint64_t>(in + 80);
    h.n_blocks = get<uint64_t>(in + 88);
    h.payload_checksum = get<uint64_t>(in + 96);
    std::memcpy(h.architecture, in + 104, 16);
    return h;
}

// What this model and store expect in a header (sizes and payload left zero).
Header expected_header(const Model& model, const KvStore& store) {
    const ModelFingerprint fp = model_fingerprint(model);
    const KvGeometry& g = store.geometry();
    Header h;
    h.model_hash = fp.model_hash;
    h.vocab_hash = fp.vocab_hash;
    h.weights_hash = fp.weights_hash;
    h.n_layers = static_cast<uint32_t>(g.n_layers);
    h.n_kv_heads = static_cast<uint32_t>(g.n_kv_heads);
    h.head_dim = static_cast<uint32_t>(g.head_dim);
    h.block_size = static_cast<uint32_t>(g.block_size);
    h.kv_dtype = static_cast<uint32_t>(g.dtype);
    h.n_vocab = static_cast<uint32_t>(model.spec().n_vocab);
    h.block_bytes = store.block_bytes();
    std::memcpy(h.architecture, fp.architecture.data(), std::min<size_t>(fp.architecture.size(), 15));
    return h;
}

uint64_t payload_checksum(std::span<const std::byte> tokens, std::span<const std::byte> kv) {
    return checksum64(kv, checksum64(tokens, 0x5e55));
}

struct FileCloser {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};

}  // namespace

uint64_t checksum64(std::span<const std::byte> bytes, uint64_t seed) {
    // Four independent lanes of 8-byte words (fast on long KV payloads), then the tail.
    uint64_t lane[4] = {seed ^ 0x243f6a8885a308d3ull, seed ^ 0x13198a2e03707344ull, seed ^ 0xa4093822299f31d0ull,
                        seed ^ 0x082efa98ec4e6c89ull};
    const std::byte* p = bytes.data();
    size_t n = bytes.size();
    while (n >= 32) {
        for (int i = 0; i < 4; ++i) {
            lane[i] = (lane[i] ^ get<uint64_t>(p + 8 * i)) * 0x9fb21c651e98df25ull;
            lane[i] ^= lane[i] >> 29;
        }
        p += 32;
        n -= 32;
    }
    uint64_t h = mix64(lane[0]) ^ std::rotl(mix64(lane[1]), 17) ^ std::rotl(mix64(lane[2]), 31) ^
                 std::rotl(mix64(lane[3]), 47);
    while (n >= 8) {
        h = mix64(h ^ get<uint64_t>(p));
        p += 8;
        n -= 8;
    }
    uint64_t tail = 0;
    if (n > 0) std::memcpy(&tail, p, n);  // p may be null for an empty span
    return mix64(h ^ tail ^ (static_cast<uint64_t>(bytes.size()) << 3));
}

ModelFingerprint model_fingerprint(const Model& model) {
    ModelFingerprint fp;
    const DecoderSpec& s = model.spec();
    fp.architecture = s.architecture;
    Hasher m;
    m.add(s.architecture);
    for (const int64_t v : {s.n_vocab, s.n_embd, s.n_layers, s.n_heads, s.n_kv_heads, s.head_dim, s.n_ff, s.n_rot,
                            static_cast<int64_t>(s.rope_style), static_cast<int64_t>(s.has_rope_freq_factors),
                            static_cast<int64_t>(s.qk_norm), static_cast<int64_t>(s.tied_output)})
        m.add(static_cast<uint64_t>(v));
    m.add_float(s.rms_eps);
    m.add_float(s.rope_freq_base);
    m.add_float(s.rope_freq_scale);
    fp.model_hash = m.value();

    const Tokenizer& tok = model.tokenizer();
    Hasher v;
    v.add(static_cast<uint64_t>(tok.n_vocab()));
    for (const int32_t id : {tok.bos(), tok.eos(), tok.unk()}) v.add(static_cast<uint64_t>(static_cast<uint32_t>(id)));
    for (int32_t id = 0; id < tok.n_vocab(); ++id) v.add(tok.token_to_piece(id, true));
    fp.vocab_hash = v.value();

    Hasher w;
    for (const TensorView& t : model.weights().tensors()) {
        w.add(t.name);
        w.add(static_cast<uint64_t>(t.type));
        for (const int64_t d : t.ne) w.add(static_cast<uint64_t>(d));
        w.add(static_cast<uint64_t>(t.nbytes));
        const size_t edge = std::min<size_t>(64, t.nbytes);
        w.add_bytes(std::span<const std::byte>(t.data, edge));
        w.add_bytes(std::span<const std::byte>(t.data + t.nbytes - edge, edge));
    }
    fp.weights_hash = w.value();
    return fp;
}

void write_session_file(const std::string& path, const Model& model, const KvStore& store, const SequenceImage& image) {
    Header h = expected_header(model, store);
    const int64_t n_blocks = (image.n_cached + image.block_size - 1) / std::max<int64_t>(1, image.block_size);
    if (image.block_size != store.geometry().block_size || image.block_bytes != store.block_bytes() ||
        image.kv.size() != static_cast<size_t>(n_blocks) * image.block_bytes)
        fail(INLAY_ERR_INTERNAL, "write_session_file: the image does not match the KV store");
    h.n_tokens = image.tokens.size();
    h.n_cached = static_cast<uint64_t>(image.n_cached);
    h.n_blocks = static_cast<uint64_t>(n_blocks);
    const auto token_bytes = std::as_bytes(std::span<const int32_t>(image.tokens));
    h.payload_checksum = payload_checksum(token_bytes, image.kv);
    std::byte header[kHeaderBytes];
    encode(h, header);

    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "wb"));
    if (!f) fail(INLAY_ERR_IO, "cannot create session file '{}'", path);
    bool ok = std::fwrite(header, 1, kHeaderBytes, f.get()) == kHeaderBytes;
    // An empty conversation has no token or KV bytes (and null data pointers, which fwrite
    // must not be given).
    ok = ok && (token_bytes.empty() ||
                std::fwrite(token_bytes.data(), 1, token_bytes.size(), f.get()) == token_bytes.size());
    ok = ok && (image.kv.empty() || std::fwrite(image.kv.data(), 1, image.kv.size(), f.get()) == image.kv.size());
    ok = ok && std::fflush(f.get()) == 0;
    if (std::fclose(f.release()) != 0) ok = false;
    if (!ok) {
        std::remove(path.c_str());
        fail(INLAY_ERR_IO, "cannot write session file '{}'", path);
    }
}

SequenceImage read_session_file(const std::string& path, const Model& model, const KvStore& store) {
    const MappedFile file(path);
    const std::span<const std::byte> bytes = file.bytes();
    if (bytes.size() < 8) {
        if (bytes.empty() || std::memcmp(bytes.data(), kMagic, bytes.size()) == 0)
            fail(INLAY_ERR_TRUNCATED, "session file '{}' ends inside its header ({} bytes)", path, bytes.size());
        fail(INLAY_ERR_BAD_FORMAT, "'{}' is not an inlay session file (bad magic)", path);
    }
    if (std::memcmp(bytes.data(), kMagic, 8) != 0)
        fail(INLAY_ERR_BAD_FORMAT, "'{}' is not an inlay session file (bad magic)", path);
    if (bytes.size() < kHeaderBytes)
        fail(INLAY_ERR_TRUNCATED, "session file '{}' ends inside its header ({} of {} bytes)", path, bytes.size(),
             kHeaderBytes);
    const uint32_t version = get<uint32_t>(bytes.data() + 8);
    if (get<uint64_t>(bytes.data() + kHeaderChecked) !=
        checksum64(bytes.subspan(0, kHeaderChecked), 0))
        fail(INLAY_ERR_BAD_FORMAT, "session file '{}': header checksum mismatch (corrupt file)", path);
    if (version != kVersion)
        fail(INLAY_ERR_UNSUPPORTED, "session file '{}' has format version {}; this library reads version {}", path,
             version, kVersion);
    if (get<uint32_t>(bytes.data() + 12) != kHeaderBytes)
        fail(INLAY_ERR_BAD_FORMAT, "session file '{}': header size {} (expected {})", path,
             get<uint32_t>(bytes.data() + 12), kHeaderBytes);

    const Header h = decode(bytes.data());
    const Header want = expected_header(model, store);
    auto mismatch = [&](const char* what, uint64_t got, uint64_t expected) {
        if (got != expected)
            fail(INLAY_ERR_SHAPE_MISMATCH, "session file '{}' was saved from another model: {} is {}, this model has {}",
                 path, what, got, expected);
    };
    if (std::memcmp(h.architecture, want.architecture, 16) != 0)
        fail(INLAY_ERR_SHAPE_MISMATCH, "session file '{}' was saved from another model: architecture {}, not '{}'",
             path, utf8::quoted(std::string_view(h.architecture, strnlen(h.architecture, 16)), '\''),
             std::string(want.architecture, strnlen(want.architecture, 16)));
    mismatch("n_layers", h.n_layers, want.n_layers);
    mismatch("n_kv_heads", h.n_kv_heads, want.n_kv_heads);
    mismatch("head_dim", h.head_dim, want.head_dim);
    mismatch("n_vocab", h.n_vocab, want.n_vocab);
    mismatch("the KV block size", h.block_size, want.block_size);
    mismatch("the KV type", h.kv_dtype, want.kv_dtype);
    mismatch("the KV block bytes", h.block_bytes, want.block_bytes);
    mismatch("the model hash (dimensions, RoPE, norms)", h.model_hash, want.model_hash);
    mismatch("the vocabulary hash", h.vocab_hash, want.vocab_hash);
    mismatch("the weights hash", h.weights_hash, want.weights_hash);

    if (h.n_cached > h.n_tokens)
        fail(INLAY_ERR_BAD_FORMAT, "session file '{}': {} cached tokens of {}", path, h.n_cached, h.n_tokens);
    const uint64_t bs = h.block_size;
    if (h.n_blocks != (h.n_cached + bs - 1) / bs)
        fail(INLAY_ERR_BAD_FORMAT, "session file '{}': {} KV blocks for {} cached tokens", path, h.n_blocks, h.n_cached);
    // Sizes against the actual file before anything is allocated.
    const uint64_t body = bytes.size() - kHeaderBytes;
    if (h.n_tokens > body / 4)
        fail(INLAY_ERR_TRUNCATED, "session file '{}': {} tokens do not fit in {} bytes", path, h.n_tokens, body);
    const uint64_t token_bytes = h.n_tokens * 4;
    if (h.n_blocks > (body - token_bytes) / h.block_bytes)
        fail(INLAY_ERR_TRUNCATED, "session file '{}' ends inside its KV data ({} blocks of {} bytes declared)", path,
             h.n_blocks, h.block_bytes);
    const uint64_t kv_bytes = h.n_blocks * h.block_bytes;
    if (token_bytes + kv_bytes != body)
        fail(INLAY_ERR_BAD_FORMAT, "session file '{}' has {} bytes after its data", path, body - token_bytes - kv_bytes);
    const auto tokens = bytes.subspan(kHeaderBytes, token_bytes);
    const auto kv = bytes.subspan(kHeaderBytes + token_bytes, kv_bytes);
    if (payload_checksum(tokens, kv) != h.payload_checksum)
        fail(INLAY_ERR_BAD_FORMAT, "session file '{}': data checksum mismatch (corrupt file)", path);

    SequenceImage image;
    image.tokens.resize(h.n_tokens);
    if (token_bytes) std::memcpy(image.tokens.data(), tokens.data(), token_bytes);
    for (const int32_t t : image.tokens)
        if (t < 0 || t >= static_cast<int64_t>(h.n_vocab))
            fail(INLAY_ERR_BAD_FORMAT, "session file '{}': token id {} outside the vocabulary", path, t);
    image.n_cached = static_cast<int64_t>(h.n_cached);
    image.block_size = static_cast<int64_t>(bs);
    image.block_bytes = h.block_bytes;
    image.kv.assign(kv.begin(), kv.end());
    return image;
}

}  // namespace inlay
