// Fuzz target: loading a Hugging Face folder (Model::load on a directory): config.json,
// the safetensors reader (single file or index + shards), tokenizer.json,
// tokenizer_config.json, generation_config.json and chat_template.jinja.
//
// Input: a small container of files, each record
//   u8 file id (modulo the table below) | u32 little-endian length | that many bytes
// (a length past the end takes the rest; a later record of the same id replaces the
// file). tokenizer.model is left out: it is parsed by the sentencepiece library, not
// inlay. Seeds: tiny checkpoints of tests/support/safetensors_fixtures (Llama and Qwen3,
// F32 and BF16, tied, sharded) and the malformed safetensors corpus inside a valid folder.
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "model/model.h"
#include "support/safetensors_fixtures.h"
#include "support/safetensors_malformed.h"
#include "support/test_paths.h"

namespace inlay::fuzz {
namespace {

constexpr const char* kFiles[] = {
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "generation_config.json",
    "model.safetensors.index.json",
    "model-00001-of-00002.safetensors",
    "model-00002-of-00002.safetensors",
    "chat_template.jinja",
};
constexpr size_t kNumFiles = sizeof kFiles / sizeof kFiles[0];

using Folder = std::map<size_t, std::string>;  // file id -> content

std::string pack(const Folder& folder) {
    std::string out;
    for (const auto& [id, bytes] : folder) {
        out.push_back(static_cast<char>(id));
        const auto n = static_cast<uint32_t>(bytes.size());
        char len[4];
        std::memcpy(len, &n, 4);
        out.append(len, 4);
        out += bytes;
    }
    return out;
}

Folder unpack(const uint8_t* data, size_t size) {
    Folder folder;
    size_t at = 0;
    while (at < size) {
        const size_t id = data[at++] % kNumFiles;
        uint32_t n = 0;
        const size_t have = std::min<size_t>(4, size - at);
        std::memcpy(&n, data + at, have);
        at += have;
        const size_t take = std::min<size_t>(n, size - at);
        folder[id].assign(reinterpret_cast<const char*>(data + at), take);
        at += take;
    }
    return folder;
}

Folder read_folder(const std::filesystem::path& dir) {
    Folder folder;
    for (size_t id = 0; id < kNumFiles; ++id)
        if (std::filesystem::exists(dir / kFiles[id])) folder[id] = test::read_file(dir / kFiles[id]);
    return folder;
}

}  // namespace

std::vector<Seed> seeds() {
    std::vector<Seed> out;
    const auto dir = scratch_dir() / "seed";
    auto tiny = [&](const std::string& name, test::TinyHfOptions o) {
        std::filesystem::remove_all(dir);
        o.n_embd = 32;
        o.n_layers = 1;
        o.n_heads = 4;
        o.n_kv_heads = 2;
        o.n_ff = 48;
        o.context = 64;
        test::write_tiny_hf_folder(dir, o);
        Folder folder = read_folder(dir);
        folder[3] = R"({"add_bos_token": false, "eos_token": "<|im_end|>",)"
                    R"( "chat_template": "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"})";
        out.push_back({name, pack(folder)});
        return folder;
    };
    test::TinyHfOptions llama;
    const Folder base = tiny("llama-f32", llama);
    test::TinyHfOptions qwen;
    qwen.arch = "qwen3";
    qwen.dtype = StDType::BF16;
    qwen.tied = true;
    tiny("qwen3-bf16-tied", qwen);
    test::TinyHfOptions sharded;
    sharded.max_shard_bytes = 20000;
    sharded.rope_scaling = R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,)"
                           R"( "high_freq_factor": 4.0, "original_max_position_embeddings": 32})";
    tiny("llama-sharded-llama3-rope", sharded);
    // Each malformed weights file in an otherwise valid folder.
    for (const auto& c : test::malformed_safetensors_corpus()) {
        Folder folder = base;
        folder[1] = to_string(c.bytes);
        out.push_back({"malformed-" + c.name, pack(folder)});
    }
    std::filesystem::remove_all(dir);
    return out;
}

}  // namespace inlay::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace inlay;
    const auto dir = fuzz::scratch_dir() / "folder";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (const auto& [id, bytes] : fuzz::unpack(data, size)) fuzz::write_file(dir / fuzz::kFiles[id], bytes);
    fuzz::expect_clean("Model::load(folder)", [&] {
        ModelOptions options;
        options.n_threads = 1;
        options.device = DeviceKind::cpu;
        const auto model = Model::load(dir.string(), options);
        const Tokenizer& tok = model->tokenizer();
        const auto ids = tok.encode("Hello world <|im_start|>", true);
        (void)tok.decode(ids, true, true);
        for (int32_t id = 0; id < tok.n_vocab(); ++id) (void)tok.token_to_piece(id, true);
    });
    return 0;
}
