#include "support/gguf_malformed.h"

#include <functional>
#include <optional>

#include <fmt/format.h>

#include "support/gguf_fixtures.h"

namespace inlay::test {
namespace {

constexpr uint64_t kTwo63 = 1ULL << 63;
constexpr uint64_t kMaxU64 = ~0ULL;

using KvWriter = std::function<void(GgufBytes&)>;

struct TensorSpec {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    uint64_t offset;
};

// A small, valid GGUF by default (4 keys, 2 tensors: "a" f32 [4,2] at 0 and "b" f16
// [8] at 32, 48 data bytes); each case changes one thing.
struct Spec {
    std::string magic = "GGUF";
    uint32_t version = 3;
    std::optional<uint64_t> n_tensors;  // default: tensors.size()
    std::optional<uint64_t> n_kv;       // default: kvs.size()
    std::vector<KvWriter> kvs = {
        [](GgufBytes& b) { b.kv_string("general.architecture", "llama"); },
        [](GgufBytes& b) { b.kv_u32("test.count", 7); },
        [](GgufBytes& b) { b.kv_i32_array("test.list", {1, 2, 3, 4}); },
        [](GgufBytes& b) { b.kv_string_array("test.names", {"x", "yz"}); },
    };
    std::vector<TensorSpec> tensors = {{"a", {4, 2}, 0, 0}, {"b", {8}, 1, 32}};
    uint64_t alignment = 32;
    size_t data_bytes = 48;

    Spec& no_tensors() {
        tensors.clear();
        data_bytes = 0;
        return *this;
    }
};

std::vector<std::byte> build(const Spec& s) {
    GgufBytes b;
    b.raw(s.magic).u32(s.version).u64(s.n_tensors.value_or(s.tensors.size())).u64(s.n_kv.value_or(s.kvs.size()));
    for (const auto& kv : s.kvs) kv(b);
    for (const auto& t : s.tensors) b.tensor_info(t.name, t.dims, t.type, t.offset);
    if (!s.tensors.empty()) {
        b.pad_to(s.alignment);
        for (size_t i = 0; i < s.data_bytes; ++i) b.u8(static_cast<uint8_t>(i * 7 + 1));
    }
    return b.bytes();
}

// The default Spec's file, with marks inside every field, for truncation cases.
GgufBytes marked_base() {
    GgufBytes b;
    b.mark("magic").raw("GGUF").mark("version").u32(3).mark("tensor_count").u64(2).mark("kv_count").u64(4);
    b.mark("kv0").u64(20).mark("kv0.key").raw("general.architecture").mark("kv0.type").u32(8);
    b.mark("kv0.str_len").u64(5).mark("kv0.str").raw("llama");
    b.str("test.count").u32(4).mark("kv1.value").u32(7);
    b.str("test.list").u32(9).mark("kv2.elem_type").u32(5).mark("kv2.count").u64(4).mark("kv2.elems");
    b.i32(1).i32(2).i32(3).i32(4);
    b.str("test.names").u32(9).u32(8).u64(2).str("x").mark("kv3.s1").str("yz");
    b.mark("t0").str("a").mark("t0.n_dims").u32(2).mark("t0.dims").u64(4).u64(2).mark("t0.type").u32(0);
    b.mark("t0.offset").u64(0);
    b.str("b").u32(1).u64(8).u32(1).u64(32);
    b.mark("pad").pad_to(32).mark("data");
    for (size_t i = 0; i < 48; ++i) b.u8(static_cast<uint8_t>(i * 7 + 1));
    return b;
}

class Corpus {
public:
    void add(std::string name, std::vector<std::byte> bytes, inlay_status expected, std::string contains,
             bool model_level = false) {
        cases_.push_back({std::move(name), std::move(bytes), expected, std::move(contains), model_level});
    }
    void bad(std::string name, const Spec& spec, std::string contains) {
        add(std::move(name), build(spec), INLAY_ERR_BAD_FORMAT, std::move(contains));
    }
    void truncated(std::string name, const Spec& spec, std::string contains) {
        add(std::move(name), build(spec), INLAY_ERR_TRUNCATED, std::move(contains));
    }
    void unsupported(std::string name, const Spec& spec, std::string contains) {
        add(std::move(name), build(spec), INLAY_ERR_UNSUPPORTED, std::move(contains));
    }
    std::vector<MalformedCase> take() { return std::move(cases_); }

private:
    std::vector<MalformedCase> cases_;
};

void add_truncations(Corpus& c) {
    const GgufBytes base = marked_base();
    const auto cut = [&](std::string name, const std::string& mark, size_t delta, std::string contains) {
        c.add("truncated_" + name, base.prefix(base.at(mark) + delta), INLAY_ERR_TRUNCATED, std::move(contains));
    };
    c.add("truncated_empty_file", {}, INLAY_ERR_TRUNCATED, "file ends inside the magic");
    cut("magic", "magic", 2, "file ends inside the magic");
    cut("version", "version", 3, "file ends inside the version");
    cut("tensor_count", "tensor_count", 5, "file ends inside the tensor count");
    cut("kv_count", "kv_count", 1, "file ends inside the kv count");
    cut("key_length", "kv0", 3, "key #0: file ends inside the key length");
    cut("key_bytes", "kv0.key", 7, "key #0: key of 20 bytes runs past the end");
    cut("value_type", "kv0.type", 2, "key #0 'general.architecture': file ends inside the value type");
    cut("string_length", "kv0.str_len", 4, "'general.architecture': file ends inside the string value length");
    cut("string_bytes", "kv0.str", 2, "'general.architecture': string value of 5 bytes runs past");
    cut("scalar_value", "kv1.value", 1, "key #1 'test.count': file ends inside the value");
    cut("array_elem_type", "kv2.elem_type", 1, "key #2 'test.list': file ends inside the array element type");
    cut("array_length", "kv2.count", 6, "key #2 'test.list': file ends inside the array length");
    cut("array_elements", "kv2.elems", 6, "key #2 'test.list': array of 4 i32 elements runs past");
    cut("array_string", "kv3.s1", 9, "key #3 'test.names': array string of 2 bytes runs past");
    cut("tensor_name_length", "t0", 4, "tensor #0: file ends inside the tensor name length");
    cut("tensor_name", "t0", 8, "tensor #0: tensor name of 1 bytes runs past");
    cut("n_dims", "t0.n_dims", 2, "tensor #0 'a': file ends inside the n_dims");
    cut("dims", "t0.dims", 10, "tensor #0 'a': file ends inside the dims");
    cut("tensor_type", "t0.type", 1, "tensor #0 'a': file ends inside the tensor type");
    cut("tensor_offset", "t0.offset", 7, "tensor #0 'a': file ends inside the tensor data offset");
    cut("padding", "pad", 5, "file ends inside the padding before the tensor data");
    cut("data_first_tensor", "data", 10, "tensor #0 'a': data [0, +32) runs past the end");
    cut("data_last_tensor", "data", 40, "tensor #1 'b': data [32, +16) runs past the end");
}

void add_header_cases(Corpus& c) {
    Spec s;
    s.magic = "GGUE";
    c.bad("bad_magic", s, "bad magic");
    s.magic.assign(4, '\0');
    c.bad("zero_magic", s, "bad magic 0x00000000");
    for (uint32_t v : {0u, 1u, 4u}) {
        Spec sv;
        sv.version = v;
        c.unsupported(fmt::format("version_{}", v), sv, fmt::format("GGUF version {} is not supported", v));
    }
    Spec be;
    be.version = 0x03000000u;
    c.unsupported("version_big_endian", be, "big-endian");

    for (uint64_t n : {uint64_t{5}, kTwo63, kMaxU64}) {
        Spec sk;
        sk.no_tensors().n_kv = n;
        c.truncated(fmt::format("kv_count_{}", n), sk, "key #4: file ends inside the key length");
        Spec st;
        st.no_tensors().n_tensors = n;
        c.truncated(fmt::format("tensor_count_{}", n), st, "tensor #0: file ends inside the tensor name length");
    }
}

void add_kv_cases(Corpus& c) {
    const auto with_kv = [](KvWriter kv) {
        Spec s;
        s.kvs.push_back(std::move(kv));
        return s;
    };
    for (uint64_t n : {kTwo63, kMaxU64}) {
        Spec s;
        s.kvs[0] = [n](GgufBytes& b) { b.str_declared(n, "general.architecture").u32(8).str("llama"); };
        c.truncated(fmt::format("key_length_{}", n), s, fmt::format("key #0: key of {} bytes runs past", n));
        s.kvs[0] = [n](GgufBytes& b) { b.str("general.architecture").u32(8).str_declared(n, "llama"); };
        c.truncated(fmt::format("string_length_{}", n), s, fmt::format("string value of {} bytes runs past", n));
        s.kvs[0] = [n](GgufBytes& b) { b.str("test.huge").u32(9).u32(0).u64(n); };
        c.truncated(fmt::format("array_length_{}_u8", n), s, fmt::format("array of {} u8 elements runs past", n));
        s.kvs[0] = [n](GgufBytes& b) { b.str("test.huge").u32(9).u32(8).u64(n / 2); };
        c.truncated(fmt::format("array_length_{}_string", n), s,
                    fmt::format("array of {} string elements runs past", n / 2));
    }
    c.bad("empty_key", with_kv([](GgufBytes& b) { b.str("").u32(4).u32(1); }), "key #4: empty key name");
    c.bad("duplicate_key", with_kv([](GgufBytes& b) { b.kv_u32("test.count", 8); }), "key #4 'test.count': duplicate key");
    c.bad("bool_2", with_kv([](GgufBytes& b) { b.kv_bool("test.flag", 2); }), "'test.flag': bool value is 2");
    c.bad("bool_array_255", with_kv([](GgufBytes& b) { b.str("test.flags").u32(9).u32(7).u64(2).u8(1).u8(255); }),
          "'test.flags': bool value is 255");
    c.bad("value_type_13", with_kv([](GgufBytes& b) { b.str("test.x").u32(13).u32(0); }),
          "'test.x': unknown value type 13");
    c.bad("value_type_huge", with_kv([](GgufBytes& b) { b.str("test.x").u32(0xffffffffu).u32(0); }),
          "'test.x': unknown value type 4294967295");
    c.bad("array_elem_type_13", with_kv([](GgufBytes& b) { b.str("test.x").u32(9).u32(13).u64(1).u32(0); }),
          "'test.x': unknown value type 13");
    c.bad("nested_array", with_kv([](GgufBytes& b) { b.str("test.x").u32(9).u32(9).u64(1).u32(4).u64(0); }),
          "'test.x': nested arrays");
    c.bad("u64_array_above_int64", with_kv([](GgufBytes& b) { b.str("test.x").u32(9).u32(10).u64(2).u64(1).u64(kTwo63); }),
          "'test.x': u64 array element 1");
    const auto alignment_case = [&](std::string name, KvWriter kv, std::string contains) {
        c.bad(std::move(name), with_kv(std::move(kv)), std::move(contains));
    };
    alignment_case("alignment_0", [](GgufBytes& b) { b.kv_u32("general.alignment", 0); },
                   "'general.alignment': 0 is not a power of two");
    alignment_case("alignment_3", [](GgufBytes& b) { b.kv_u32("general.alignment", 3); },
                   "'general.alignment': 3 is not a power of two");
    alignment_case("alignment_u64", [](GgufBytes& b) { b.kv_u64("general.alignment", 32); },
                   "'general.alignment': must be a u32, not u64");
    alignment_case("alignment_string", [](GgufBytes& b) { b.kv_string("general.alignment", "32"); },
                   "'general.alignment': must be a u32, not string");
}

void add_tensor_cases(Corpus& c) {
    const auto with_tensor = [](size_t i, TensorSpec t) {
        Spec s;
        s.tensors[i] = std::move(t);
        return s;
    };
    c.bad("tensor_empty_name", with_tensor(1, {"", {8}, 1, 32}), "tensor #1: empty tensor name");
    c.bad("tensor_duplicate_name", with_tensor(1, {"a", {8}, 1, 32}), "tensor #1 'a': duplicate tensor name");
    c.bad("tensor_n_dims_0", with_tensor(1, {"b", {}, 1, 32}), "tensor #1 'b': n_dims is 0");
    c.bad("tensor_n_dims_5", with_tensor(1, {"b", {8, 1, 1, 1, 1}, 1, 32}), "tensor #1 'b': n_dims is 5");
    c.bad("tensor_negative_dim", with_tensor(1, {"b", {8, kMaxU64}, 1, 32}), "tensor #1 'b': dim 1 is negative (-1)");
    c.bad("tensor_dim_int64_min", with_tensor(0, {"a", {kTwo63}, 0, 0}), "tensor #0 'a': dim 0 is negative");
    c.bad("tensor_elements_overflow", with_tensor(0, {"a", {1ULL << 32, 1ULL << 32}, 0, 0}),
          "tensor #0 'a': element count overflows");
    c.bad("tensor_elements_overflow_4d", with_tensor(0, {"a", {1ULL << 16, 1ULL << 16, 1ULL << 16, 1ULL << 16}, 0, 0}),
          "tensor #0 'a': element count overflows");
    c.bad("tensor_bytes_overflow", with_tensor(0, {"a", {1ULL << 31, 1ULL << 31}, 0, 0}),
          "tensor #0 'a': byte size overflows");
    c.bad("tensor_partial_block", with_tensor(0, {"a", {33, 1}, 8, 0}),
          "tensor #0 'a': ne[0] = 33 is not a multiple of the q8_0 block size 32");
    c.bad("tensor_misaligned_offset", with_tensor(1, {"b", {8}, 1, 33}),
          "tensor #1 'b': data offset 33 is not a multiple of the alignment 32");
    Spec align64;
    align64.kvs.push_back([](GgufBytes& b) { b.kv_u32("general.alignment", 64); });
    align64.alignment = 64;
    c.bad("tensor_misaligned_offset_alignment_64", align64, "data offset 32 is not a multiple of the alignment 64");
    c.bad("tensor_overlap", with_tensor(1, {"b", {8}, 1, 0}), "overlaps tensor");
    Spec partial = with_tensor(0, {"a", {4, 4}, 0, 0});
    partial.data_bytes = 96;
    c.bad("tensor_overlap_partial", partial, "tensor #1 'b' (data [32, +16)) overlaps tensor #0 'a'");
    c.unsupported("tensor_type_q2_k", with_tensor(0, {"a", {32, 1}, 10, 0}), "ggml tensor type 10 (q2_K) is not supported");
    c.unsupported("tensor_type_1000", with_tensor(1, {"b", {8}, 1000, 32}), "ggml tensor type 1000 (unknown)");
    c.truncated("tensor_data_past_end", with_tensor(1, {"b", {16}, 1, 32}), "tensor #1 'b': data [32, +32) runs past");
    c.truncated("tensor_offset_huge", with_tensor(1, {"b", {8}, 1, kTwo63}), "tensor #1 'b': data");
    c.truncated("tensor_offset_wraps", with_tensor(1, {"b", {8}, 1, kMaxU64 - 31}), "tensor #1 'b': data");
    Spec short_data;
    short_data.data_bytes = 47;
    c.truncated("tensor_data_one_byte_short", short_data, "tensor #1 'b'");
}

// Model-level cases: GGUF-valid files whose model is broken.
void add_model_cases(Corpus& c) {
    TinyLlamaOptions o;
    o.n_embd = 32;
    o.n_ff = 64;
    o.n_layers = 1;
    o.n_heads = 4;
    o.n_kv_heads = 2;
    o.n_vocab = 300;
    o.context = 64;
    const TinyModel base = make_tiny_llama(o);
    const auto add = [&](std::string name, inlay_status expected, std::string contains,
                         const std::function<void(TinyModel&)>& edit) {
        TinyModel m = base;
        edit(m);
        c.add("model_" + name, m.to_bytes(), expected, std::move(contains), true);
    };
    const auto reshape = [](TinyTensor& t, std::vector<int64_t> ne) {
        int64_t n = 1;
        for (int64_t d : ne) n *= d;
        t.ne = std::move(ne);
        t.values.assign(static_cast<size_t>(n), 0.01f);
        t.data = encode_fixture_weights(t.type, t.values);
    };
    add("missing_attn_q", INLAY_ERR_MISSING, "blk.0.attn_q.weight", [](TinyModel& m) { m.remove_tensor("blk.0.attn_q.weight"); });
    add("missing_output_norm", INLAY_ERR_MISSING, "output_norm.weight",
        [](TinyModel& m) { m.remove_tensor("output_norm.weight"); });
    add("missing_token_embd", INLAY_ERR_MISSING, "token_embd.weight", [](TinyModel& m) { m.remove_tensor("token_embd.weight"); });
    add("block_count_exceeds_tensors", INLAY_ERR_MISSING, "blk.1.",
        [](TinyModel& m) { m.set_key("llama.block_count", MetadataValue::from_int(ValueType::U32, 2)); });
    add("missing_embedding_length", INLAY_ERR_MISSING, "llama.embedding_length",
        [](TinyModel& m) { m.remove_key("llama.embedding_length"); });
    add("missing_block_count", INLAY_ERR_MISSING, "llama.block_count", [](TinyModel& m) { m.remove_key("llama.block_count"); });
    add("missing_architecture", INLAY_ERR_MISSING, "general.architecture",
        [](TinyModel& m) { m.remove_key("general.architecture"); });
    add("missing_tokens", INLAY_ERR_MISSING, "tokenizer.ggml.tokens", [](TinyModel& m) { m.remove_key("tokenizer.ggml.tokens"); });
    add("unsupported_architecture", INLAY_ERR_UNSUPPORTED, "gptj",
        [](TinyModel& m) { m.set_key("general.architecture", MetadataValue::from_string("gptj")); });
    add("wrong_shape_attn_k", INLAY_ERR_SHAPE_MISMATCH, "blk.0.attn_k.weight",
        [&](TinyModel& m) { reshape(*m.find_tensor("blk.0.attn_k.weight"), {32, 32}); });
    add("transposed_ffn_down", INLAY_ERR_SHAPE_MISMATCH, "blk.0.ffn_down.weight",
        [](TinyModel& m) { m.find_tensor("blk.0.ffn_down.weight")->ne = {32, 64}; });
    add("wrong_shape_output_norm", INLAY_ERR_SHAPE_MISMATCH, "output_norm.weight",
        [&](TinyModel& m) { reshape(*m.find_tensor("output_norm.weight"), {16}); });
    add("block_count_is_string", INLAY_ERR_BAD_FORMAT, "llama.block_count",
        [](TinyModel& m) { m.set_key("llama.block_count", MetadataValue::from_string("1")); });
    add("rms_eps_is_string", INLAY_ERR_BAD_FORMAT, "llama.attention.layer_norm_rms_epsilon",
        [](TinyModel& m) { m.set_key("llama.attention.layer_norm_rms_epsilon", MetadataValue::from_string("1e-5")); });
    add("tokens_are_ints", INLAY_ERR_BAD_FORMAT, "tokenizer.ggml.tokens", [](TinyModel& m) {
        MetadataArray a{ValueType::I32, std::vector<int64_t>(300, 7), {}, {}};
        m.set_key("tokenizer.ggml.tokens", MetadataValue::from_array(std::move(a)));
    });
    add("head_count_not_dividing_embd", INLAY_ERR_BAD_FORMAT, "llama.attention.head_count", [](TinyModel& m) {
        m.set_key("llama.attention.head_count", MetadataValue::from_int(ValueType::U32, 3));
        m.set_key("llama.attention.head_count_kv", MetadataValue::from_int(ValueType::U32, 3));
    });
    add("head_count_kv_not_dividing", INLAY_ERR_BAD_FORMAT, "llama.attention.head_count_kv",
        [](TinyModel& m) { m.set_key("llama.attention.head_count_kv", MetadataValue::from_int(ValueType::U32, 3)); });
    add("head_count_zero", INLAY_ERR_BAD_FORMAT, "llama.attention.head_count",
        [](TinyModel& m) { m.set_key("llama.attention.head_count", MetadataValue::from_int(ValueType::U32, 0)); });
    add("vocab_smaller_than_token_embd", INLAY_ERR_SHAPE_MISMATCH, "token_embd.weight", [](TinyModel& m) {
        m.remove_key("llama.vocab_size");
        for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"}) {
            auto& a = std::get<MetadataArray>(m.find_key(key)->value);
            if (!a.strings.empty()) a.strings.pop_back();
            if (!a.floats.empty()) a.floats.pop_back();
            if (!a.ints.empty()) a.ints.pop_back();
        }
    });
}

}  // namespace

std::vector<MalformedCase> malformed_gguf_corpus() {
    Corpus c;
    add_truncations(c);
    add_header_cases(c);
    add_kv_cases(c);
    add_tensor_cases(c);
    add_model_cases(c);
    return c.take();
}

}  // namespace inlay::test
