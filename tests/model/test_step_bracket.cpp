// Decoder::forward's recording bracket (StepGraphBackend: graph_begin after the batch
// upload, graph_end before the outputs are read, graph_abort when an op throws) and the
// executor's retry of a step a backend reports as not run (StepRetry), on the CPU
// backend with the hooks of a backend that records (what the CUDA backend does with CUDA
// graphs, which needs a GPU to run). The CPU's results are deterministic, so every step
// must give bitwise the logits of the plain CPU executor, retried or not.
#include <catch2/catch.hpp>
#include <cstring>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "io/gguf_reader.h"
#include "model/backend_executor_impl.h"
#include "model/decoder_impl.h"
#include "model/families/family.h"
#include "support/gguf_fixtures.h"

using namespace inlay;

namespace {

// The CPU backend with recording hooks that count calls and fail on request.
class BracketCpu : public CpuBackend {
public:
    using CpuBackend::CpuBackend;
    int begins = 0, ends = 0, aborts = 0;
    bool open = false;           // between graph_begin and graph_end/graph_abort
    int refuse_ends = 0;         // graph_end throws StepRetry this many times
    int failing_attentions = 0;  // attention throws this many times
    bool abort_blames_recording = false;

    bool replay_next = false;  // graph_begin says "replay" once: the ops must be skipped
    int attentions = 0;        // attention calls

    bool graph_begin(Batch&, const KvStorage&, const Scratch&) {
        REQUIRE_FALSE(open);
        ++begins;
        open = true;
        return std::exchange(replay_next, false);
    }
    void graph_end(Batch&) {
        REQUIRE(open);
        ++ends;
        open = false;
        if (refuse_ends > 0) {
            --refuse_ends;
            throw StepRetry("recording refused (test)");
        }
    }
    bool graph_abort(Batch&) {
        if (!open) return false;  // graph_end threw after closing: nothing to discard
        ++aborts;
        open = false;
        return abort_blames_recording;
    }
    void attention(const Buffer& q, const KvStorage& kv, int64_t layer, const Batch& batch, int64_t n_heads,
                   float scale, Buffer& out, Scratch& scratch) {
        REQUIRE(open);  // every op runs inside the bracket
        ++attentions;
        if (failing_attentions > 0) {
            --failing_attentions;
            fail(INLAY_ERR_INTERNAL, "attention failed (test)");
        }
        CpuBackend::attention(q, kv, layer, batch, n_heads, scale, out, scratch);
    }
};
static_assert(StepGraphBackend<BracketCpu>);
static_assert(!StepGraphBackend<CpuBackend>);

}  // namespace

template class inlay::Decoder<BracketCpu>;
template class inlay::BackendExecutor<BracketCpu>;

TEST_CASE("a step's ops run between graph_begin and graph_end; a refused step runs again", "[model][graphs]") {
    const test::TinyLlamaOptions o;
    const auto bytes = test::make_tiny_llama_gguf(o);
    const auto file = GgufFile::from_bytes(bytes, "tiny");
    DecoderSpec spec = spec_from_gguf_metadata(file->metadata());
    spec.n_vocab = o.n_vocab;
    const BackendExecutor<CpuBackend> plain(std::make_unique<CpuBackend>(2), spec, *file);
    auto owned = std::make_unique<BracketCpu>(2);
    BracketCpu& hooks = *owned;
    const BackendExecutor<BracketCpu> bracketed(std::move(owned), spec, *file);

    const auto n_vocab = static_cast<size_t>(spec.n_vocab);
    const auto kv_plain = plain.new_kv_store(plain.kv_geometry(16, DType::F16), 4);
    const auto kv_hooks = bracketed.new_kv_store(bracketed.kv_geometry(16, DType::F16), 4);
    const auto ws_plain = plain.new_workspace(16, 16);
    const auto ws_hooks = bracketed.new_workspace(16, 16);
    const std::vector<int32_t> table = {0, 1};
    int64_t len = 0;
    // step 0: a 6-token prompt; then one token a step. Step 2's end is refused (retried),
    // step 3's attention fails with the recording blamed (retried), step 4's attention
    // fails otherwise (the error reaches the caller, and the step is then made again).
    for (int step = 0; step < 6; ++step) {
        INFO("step " << step);
        BatchBuilder b;
        const int64_t n = step == 0 ? 6 : 1;
        const int32_t s = b.add_sequence(table, len + n);
        for (int64_t i = 0; i < n; ++i)
            b.add_token(static_cast<int32_t>(5 + (len + i) * 7 % 200), static_cast<int32_t>(len + i), s, i + 1 == n);
        std::vector<float> want(n_vocab), got(n_vocab, -1.0f);
        plain.step(*kv_plain, *ws_plain, b.desc(), want.data());
        const int begins = hooks.begins, ends = hooks.ends;
        if (step == 2) hooks.refuse_ends = 1;
        if (step == 3) {
            hooks.failing_attentions = 1;
            hooks.abort_blames_recording = true;
        }
        if (step == 4) {
            hooks.failing_attentions = 1;
            hooks.abort_blames_recording = false;
            try {
                bracketed.step(*kv_hooks, *ws_hooks, b.desc(), got.data());
                FAIL("the attention's failure did not reach the caller");
            } catch (const Error& e) {
                CHECK(e.status() == INLAY_ERR_INTERNAL);
                CHECK_FALSE(hooks.open);
                CHECK(hooks.aborts == 2);
            }
        }
        bracketed.step(*kv_hooks, *ws_hooks, b.desc(), got.data());
        CHECK_FALSE(hooks.open);
        CHECK(std::memcmp(want.data(), got.data(), n_vocab * sizeof(float)) == 0);
        if (step == 2 || step == 3) {
            CHECK(hooks.begins == begins + 2);  // retried once
        } else if (step != 4) {
            CHECK(hooks.begins == begins + 1);
            CHECK(hooks.ends == ends + 1);
        }
        len += n;
    }
    CHECK(hooks.aborts == 2);  // steps 3 and 4

    // A step the backend replays as recorded: graph_begin then graph_end, no op called.
    hooks.replay_next = true;
    const int attentions = hooks.attentions, begins = hooks.begins, ends = hooks.ends;
    BatchBuilder b;
    const int32_t s = b.add_sequence(table, len + 1);
    b.add_token(9, static_cast<int32_t>(len), s, true);
    std::vector<float> logits(n_vocab);
    bracketed.step(*kv_hooks, *ws_hooks, b.desc(), logits.data());
    CHECK(hooks.attentions == attentions);
    CHECK(hooks.begins == begins + 1);
    CHECK(hooks.ends == ends + 1);
    CHECK_FALSE(hooks.open);
}
