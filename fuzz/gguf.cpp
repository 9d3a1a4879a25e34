// Fuzz target: the GGUF reader, then what a model load builds from a file that parses
// (the decoder spec, the tokenizer from its tokenizer.ggml.* keys, the weights' checks).
// Input: a GGUF file. Seeds: tiny Llama models of tests/support/gguf_fixtures (F32,
// Q8_0, Q4_0, tied) and the malformed corpus of tests/support/gguf_malformed.
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "support/gguf_fixtures.h"
#include "support/gguf_malformed.h"
#include "io/gguf_reader.h"
#include "model/model.h"

namespace inlay::fuzz {

std::vector<Seed> seeds() {
    std::vector<Seed> out;
    auto tiny = [](DType type, bool tied) {
        test::TinyLlamaOptions o = tiny_model_options();
        o.weight_type = type;
        o.tied_output = tied;
        return to_string(test::make_tiny_llama_gguf(o));
    };
    out.push_back({"tiny-f32.gguf", tiny(DType::F32, false)});
    out.push_back({"tiny-q8_0-tied.gguf", tiny(DType::Q8_0, true)});
    out.push_back({"tiny-q4_0.gguf", tiny(DType::Q4_0, false)});
    for (const auto& c : test::malformed_gguf_corpus()) out.push_back({"malformed-" + c.name, to_string(c.bytes)});
    return out;
}

}  // namespace inlay::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace inlay;
    const auto* first = reinterpret_cast<const std::byte*>(data);
    std::unique_ptr<GgufFile> file;
    if (fuzz::expect_clean("GgufFile::from_bytes",
                           [&] { file = GgufFile::from_bytes({first, first + size}, "fuzz.gguf"); }) != INLAY_OK)
        return 0;
    // The whole load, as a host would do it (from a path: the mapping's code path).
    const auto path = fuzz::scratch_dir() / "model.gguf";
    fuzz::write_file(path, {reinterpret_cast<const char*>(data), size});
    fuzz::expect_clean("Model::load", [&] {
        ModelOptions options;
        options.n_threads = 1;
        options.device = DeviceKind::cpu;
        const auto model = Model::load(path.string(), options);
        const Tokenizer& tok = model->tokenizer();
        const auto ids = tok.encode("Hello world <s>", true);
        (void)tok.decode(ids, true, true);
        for (int32_t id = 0; id < tok.n_vocab(); ++id) (void)tok.token_to_piece(id, true);
    });
    return 0;
}
