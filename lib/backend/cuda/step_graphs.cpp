// CUDA graphs for decode steps: see step_graphs.h.
#include "backend/cuda/step_graphs.h"

#include <string>

#include "backend/concepts.h"
#include "backend/cuda/cuda_error.h"
#include "core/log.h"

namespace inlay::cuda_backend {

bool StepGraphPlanner::should_capture(const StepShape& shape, int64_t max_tokens) {
    if (!enabled_ || shape.n_tokens <= 0 || shape.n_tokens > max_tokens) return false;
    return !seen_.insert(shape).second;  // recorded from a shape's second step on
}

StepGraphs::~StepGraphs() {
    for (const auto& [shape, e] : execs_) (void)cudaGraphExecDestroy(e.exec);
}

void StepGraphs::disable() {
    planner_.disable();
    stats_.disabled = true;
    for (const auto& [shape, e] : execs_) (void)cudaGraphExecDestroy(e.exec);
    execs_.clear();
}

void StepGraphs::refuse_current() {
    ++stats_.refused;
    skip_next_ = true;
    if (++refusals_ >= kMaxRefusals) {
        log(LogLevel::warn, "CUDA graphs off for this workspace after {} refused recordings in a row", refusals_);
        disable();
    }
}

bool StepGraphs::begin_recorded(cudaStream_t stream, const StepShape& shape, const StepSignature& signature) {
    shape_ = shape;
    if (const auto it = execs_.find(shape); it != execs_.end() && it->second.signature == signature) {
        replaying_ = true;  // the same arguments: launched as recorded
        return true;
    }
    signature_ = signature;
    const cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {  // nothing was recorded yet: this step runs directly
        (void)cudaGetLastError();
        log(LogLevel::warn, "CUDA graphs off: cudaStreamBeginCapture failed ({}: {})", cudaGetErrorName(e),
            cudaGetErrorString(e));
        disable();
        ++stats_.direct;
        return false;
    }
    capturing_ = true;
    return false;
}

void StepGraphs::end(cudaStream_t stream) {
    if (replaying_) {
        replaying_ = false;
        check_cuda(cudaGraphLaunch(execs_.at(shape_).exec, stream), "cudaGraphLaunch");
        ++stats_.launched;
        ++stats_.replayed;
        return;
    }
    if (!capturing_) return;
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamEndCapture(stream, &graph);
    const auto refuse = [&](const char* call) {
        (void)cudaGetLastError();
        if (graph) (void)cudaGraphDestroy(graph);
        const std::string why =
            std::string(call) + " failed (" + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")";
        log(LogLevel::warn, "CUDA graph: {}; the step runs again without one", why);
        refuse_current();
        throw StepRetry("CUDA graph: " + why);
    };
    if (e == cudaSuccess && !graph) e = cudaErrorStreamCaptureInvalidated;
    if (e != cudaSuccess) refuse("cudaStreamEndCapture");
    ++stats_.captured;
    cudaGraphExec_t exec = nullptr;
    if (const auto it = execs_.find(shape_); it != execs_.end()) {
        cudaGraphExecUpdateResultInfo info{};
        if (cudaGraphExecUpdate(it->second.exec, graph, &info) == cudaSuccess) {
            exec = it->second.exec;
            it->second.signature = signature_;
            ++stats_.updated;
        } else {  // another topology: made anew below
            (void)cudaGetLastError();
            (void)cudaGraphExecDestroy(it->second.exec);
            execs_.erase(it);
        }
    }
    if (!exec) {
        e = cudaGraphInstantiate(&exec, graph, 0);
        if (e != cudaSuccess) refuse("cudaGraphInstantiate");
        execs_[shape_] = Exec{exec, signature_};
        ++stats_.instantiated;
    }
    (void)cudaGraphDestroy(graph);
    check_cuda(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    ++stats_.launched;
    refusals_ = 0;
}

bool StepGraphs::abort(cudaStream_t stream) noexcept {
    replaying_ = false;
    if (!capturing_) return false;
    capturing_ = false;
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const bool invalidated =
        cudaStreamIsCapturing(stream, &status) != cudaSuccess || status == cudaStreamCaptureStatusInvalidated;
    cudaGraph_t graph = nullptr;
    (void)cudaStreamEndCapture(stream, &graph);
    if (graph) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    if (invalidated) {
        log(LogLevel::warn, "CUDA graph: an op could not be recorded; the step runs again without one");
        refuse_current();
    }
    return invalidated;
}

}  // namespace inlay::cuda_backend
