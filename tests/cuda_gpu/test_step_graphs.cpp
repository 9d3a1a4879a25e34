// CUDA graphs for decode steps (lib/backend/cuda/step_graphs.h) on a real decoder: the
// same steps with graphs on and off give bitwise the same logits and argmax ids (a graph
// replays exactly the kernels and arguments the step launched), and decode steps after a
// shape's first are launched as graphs: replayed as recorded while their arguments stay
// the same (positions and lengths live in device memory), updated in place when the block
// tables grow.
// UNVERIFIED until run on a GPU (scripts/gpu-check.sh runs it in backend_cuda).
#include <catch2/catch.hpp>
#include <cstring>
#include <numeric>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "io/gguf_reader.h"
#include "model/decoder_impl.h"
#include "model/families/family.h"
#include "support/gguf_fixtures.h"

using namespace inlay;

namespace {

struct Run {
    std::vector<std::vector<float>> logits;  // per step, its logit rows
    std::vector<std::vector<int32_t>> ids;   // per greedy step
    cuda_backend::StepGraphStats stats;
};

// 24 steps over two sequences: a prompt of 5 tokens, then one-token steps, steps of one
// token of each sequence, and greedy steps whose ids come from the device. Each shape's
// first step runs directly.
Run run_steps(bool graphs, const GgufFile& file, const DecoderSpec& spec) {
    CudaBackend backend(0, CudaBackend::Options{{}, graphs});
    Decoder<CudaBackend> decoder(backend, spec, file);
    auto ws = decoder.make_workspace(16, 16);
    auto kv = backend.alloc_kv(decoder.kv_geometry(16, DType::F16), 8);
    const auto n_vocab = static_cast<size_t>(spec.n_vocab);
    // Sequence 0's block table grows from 3 to 5 entries at kv length 17 (step 12; tables
    // may hold more blocks than the length needs), which moves the batch's layout (its
    // arrays are padded to 4 entries): the steps after it are recorded once more.
    const std::vector<int32_t> table1 = {5};
    auto table0 = [](int64_t kv_len) {
        return kv_len <= 16 ? std::vector<int32_t>{0, 1, 2} : std::vector<int32_t>{0, 1, 2, 3, 4};
    };
    Run out;
    int64_t len0 = 0, len1 = 0;
    auto token = [&](int64_t i) { return static_cast<int32_t>(3 + (i * 37) % (spec.n_vocab - 3)); };
    for (int step = 0; step < 24; ++step) {
        BatchBuilder b;
        if (step == 0) {
            const int32_t s = b.add_sequence(table0(5), 5);
            for (int p = 0; p < 5; ++p) b.add_token(token(p), p, s, p == 4);
            len0 = 5;
        } else if (step % 3 == 0) {  // both sequences, one token each
            const int32_t s0 = b.add_sequence(table0(len0 + 1), len0 + 1);
            const int32_t s1 = b.add_sequence(table1, len1 + 1);
            b.add_token(token(step), static_cast<int32_t>(len0), s0, true);
            b.add_token(token(step + 100), static_cast<int32_t>(len1), s1, true);
            ++len0;
            ++len1;
        } else {
            const int32_t s = b.add_sequence(table0(len0 + 1), len0 + 1);
            b.add_token(token(step), static_cast<int32_t>(len0), s, true);
            ++len0;
        }
        const auto rows = static_cast<size_t>(b.n_logit_rows());
        if (step % 4 == 3) {  // greedy on the device
            std::vector<int32_t> ids(rows, -7);
            decoder.forward(b.desc(), kv, ws, nullptr, ids.data());
            out.ids.push_back(ids);
        } else {
            std::vector<float> logits(rows * n_vocab);
            decoder.forward(b.desc(), kv, ws, logits.data());
            out.logits.push_back(logits);
        }
    }
    out.stats = backend.graph_stats(ws.batch);
    return out;
}

}  // namespace

TEST_CASE("decode steps as CUDA graphs: bitwise the steps launched one by one", "[cuda][graphs]") {
    for (const DType type : {DType::F32, DType::Q8_0}) {
        INFO(dtype_name(type));
        test::TinyLlamaOptions o;
        o.weight_type = type;
        const auto bytes = test::make_tiny_llama_gguf(o);
        const auto file = GgufFile::from_bytes(bytes, "tiny");
        DecoderSpec spec = spec_from_gguf_metadata(file->metadata());
        spec.n_vocab = o.n_vocab;
        const Run direct = run_steps(false, *file, spec);
        const Run graphed = run_steps(true, *file, spec);
        REQUIRE(direct.logits.size() == graphed.logits.size());
        for (size_t i = 0; i < direct.logits.size(); ++i) {
            INFO("logit step " << i);
            REQUIRE(direct.logits[i].size() == graphed.logits[i].size());
            CHECK(std::memcmp(direct.logits[i].data(), graphed.logits[i].data(),
                              direct.logits[i].size() * sizeof(float)) == 0);
        }
        CHECK(direct.ids == graphed.ids);
        CHECK(direct.stats.launched == 0);
        CHECK(direct.stats.disabled);
        // Shapes (1 token, 1 row) and (2, 2): every step after each one's first is a graph.
        const cuda_backend::StepGraphStats& g = graphed.stats;
        INFO("captured " << g.captured << " instantiated " << g.instantiated << " updated " << g.updated << " launched "
                         << g.launched << " direct " << g.direct);
        CHECK_FALSE(g.disabled);
        CHECK(g.refused == 0);
        CHECK(g.direct == 3);  // the prompt (a shape of its own) and the first step of each shape
        CHECK(g.launched == 21);
        // Each shape's second step is recorded and instantiated, and its first step after
        // sequence 0's table grew is recorded again and updated in place; every other step
        // keeps its arguments (no split; positions and lengths live in device memory) and
        // replays without recording.
        CHECK(g.captured == 4);
        CHECK(g.instantiated == 2);
        CHECK(g.updated == 2);
        CHECK(g.replayed == 17);
    }
}
