// CUDA graphs for the CUDA backend's decode steps.
//
// A decode step launches a few hundred small kernels (about 11 per layer); launched one by
// one, the host's launch calls take about as long as the kernels of a quantized 8B model
// run, so the GPU waits on the host. A step's ops are instead recorded by stream capture
// and the step launches as one graph: the kernels then run back to back. The executable
// graph of a step shape (tokens, logit rows) is kept, and each later step of that shape
// updates it in place with its own parameters (cudaGraphExecUpdate: the same kernels in
// the same order, new arguments), which costs far less than instantiating; a step whose
// topology differs (e.g. attention now split along the keys) instantiates anew.
//
// What is recorded is exactly what the step launches (every argument of this step), so a
// replay cannot use a stale pointer or size. A step whose launch arguments are those of
// the shape's last recorded step (StepSignature: every host value the ops' arguments are
// made of) is not even recorded: its ops are skipped and the executable graph launched as
// it is, so such a step costs the host one launch. Decoding one sequence records again
// only when the batch's layout moves (its block table's length crosses a multiple of 4
// entries: every 4 x block_size tokens) or the attention's split changes. Only steps whose ops are all inlay's own
// kernels are recorded (up to kGemvMaxTokens tokens: the GEMV path; larger batches call
// cuBLAS GEMMs), and a shape only from its second step on, so that whatever an op sets up
// on first use (an NVRTC kernel loaded, a resource made lazily) is never done inside a
// capture. A capture or instantiation that CUDA refuses throws StepRetry (none of the
// step ran): the step runs again directly, and after kMaxRefusals refusals in a row the
// workspace stops recording. An op that must not run inside a capture (a kernel loaded on
// its first use) asks for the same with refuse_current().
// UNVERIFIED until run on a GPU.
#pragma once

#include <cuda_runtime.h>

#include <compare>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace inlay::cuda_backend {

// The launch shape of a step: steps of one shape usually record the same topology. The
// KV block size is part of it because a store of another geometry may need an attention
// kernel loaded on its first step, which must not happen while recording; whether the
// step feeds its tokens (a pipelined step) too, as that adds a kernel: pipelined and plain
// steps keep a graph each instead of rebuilding one at every switch, and the feed kernel
// first runs outside a recording.
struct StepShape {
    int64_t n_tokens = 0;
    int64_t n_logit_rows = 0;
    int64_t kv_block_size = 0;
    bool fed_tokens = false;
    auto operator<=>(const StepShape&) const = default;
};

// Which steps are recorded (pure: tested without a GPU).
class StepGraphPlanner {
public:
    explicit StepGraphPlanner(bool enabled) : enabled_(enabled) {}
    // Whether this step is recorded: graphs on, a step of our kernels only (at most
    // max_tokens tokens), and a shape seen before (recorded as seen either way).
    bool should_capture(const StepShape& shape, int64_t max_tokens);
    void disable() { enabled_ = false; }
    [[nodiscard]] bool enabled() const { return enabled_; }

private:
    bool enabled_;
    std::set<StepShape> seen_;
};

// Every host value a recorded step's launch arguments are made of, besides what is fixed
// for a workspace (its buffers, the weights, the model's shape): the batch block's address
// and layout, its sizes and logit rows, the attention's split, and the KV arenas.
struct StepSignature {
    const void* batch_block = nullptr;
    std::vector<size_t> batch_offsets;
    int64_t n_tokens = 0, n_seqs = 0;
    std::vector<int32_t> logit_rows;
    int32_t attention_splits = 1, attention_keys_per_split = 0;
    std::vector<const void*> kv_arenas;  // every layer's K and V arena
    int64_t kv_capacity = 0;
    int kv_type = 0;  // the cache's element type (DType), which picks the kernels
    bool fed_tokens = false;            // the step starts by feeding tokens from ...
    const void* latest_ids = nullptr;   // ... the previous step's ids (the scratch's)
    bool operator==(const StepSignature&) const = default;
};

struct StepGraphStats {
    uint64_t captured = 0;      // steps recorded
    uint64_t instantiated = 0;  // executable graphs made
    uint64_t updated = 0;       // executable graphs updated in place for a new step
    uint64_t launched = 0;      // steps launched as a graph
    uint64_t replayed = 0;      // ... of which without recording (the same arguments as the last)
    uint64_t direct = 0;        // steps whose ops were launched one by one
    uint64_t refused = 0;       // recordings the device (or an op) refused; the step was retried
    bool disabled = false;      // graphs switched off (by option, or after repeated refusals)
};

// The executable graphs of one workspace's steps, by shape. Not thread-safe (a workspace
// runs one step at a time).
class StepGraphs {
public:
    explicit StepGraphs(bool enabled) : planner_(enabled) { stats_.disabled = !enabled; }
    ~StepGraphs();
    StepGraphs(const StepGraphs&) = delete;
    StepGraphs& operator=(const StepGraphs&) = delete;

    // After the step's batch is uploaded: starts recording the stream when the planner
    // says so (max_tokens: the most tokens a recorded step may have). True when the step
    // is a replay: its signature (make_signature(), called only for a step the planner
    // records) is that of the shape's executable graph, so the caller skips the ops and
    // end() launches the graph as it is.
    template <class MakeSignature>
    bool begin(cudaStream_t stream, const StepShape& shape, int64_t max_tokens, MakeSignature&& make_signature) {
        capturing_ = false;
        replaying_ = false;
        const bool skip = std::exchange(skip_next_, false);
        if (!planner_.should_capture(shape, max_tokens) || skip) {
            ++stats_.direct;
            return false;
        }
        return begin_recorded(stream, shape, make_signature());
    }
    // Before the step's outputs are read: ends the recording and launches the step's
    // graph; throws StepRetry when CUDA refused the recording or its instantiation, and
    // inlay::Error (INLAY_ERR_INTERNAL) when the launch fails.
    void end(cudaStream_t stream);
    // An op threw while recording: the recording is discarded. True when the failure was
    // the recording's (the stream's capture was invalidated): the step may be retried,
    // and its retry runs directly.
    bool abort(cudaStream_t stream) noexcept;
    // A refusal (a recording the device refused, or an op that cannot be recorded now,
    // whose caller then throws StepRetry): the next step (the retry) runs directly, and
    // graphs go off after kMaxRefusals in a row.
    void refuse_current();

    static constexpr int kMaxRefusals = 3;

    [[nodiscard]] bool capturing() const { return capturing_; }
    [[nodiscard]] const StepGraphStats& stats() const { return stats_; }

private:
    void disable();
    // begin() for a step the planner records: a replay, or the start of a recording.
    bool begin_recorded(cudaStream_t stream, const StepShape& shape, const StepSignature& signature);

    struct Exec {
        cudaGraphExec_t exec = nullptr;
        StepSignature signature;  // of the step it was last recorded or updated from
    };

    StepGraphPlanner planner_;
    int refusals_ = 0;          // in a row
    bool skip_next_ = false;    // the next step runs directly (a retry)
    std::map<StepShape, Exec> execs_;
    bool capturing_ = false;
    bool replaying_ = false;
    StepShape shape_{};
    StepSignature signature_{};
    StepGraphStats stats_{};
};

}  // namespace inlay::cuda_backend
