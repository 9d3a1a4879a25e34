// BackendExecutor<B>: the Executor over Decoder<B> for any backend. Written once; each
// backend library instantiates it in one .cpp (cpu_executor.cpp for the CPU) that
// includes backend_executor_impl.h, and make_executor (make_executor.h) picks one.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "model/decoder.h"
#include "model/executor.h"

namespace inlay {

template <Backend B>
class BackendExecutor final : public Executor {
public:
    // Largest number of tokens run through the decoder at once by eval(); longer prompts
    // are split.
    static constexpr int64_t kMaxBatch = 512;
    // Token slots per block of an eval() sequence's private cache.
    static constexpr int64_t kBlockSize = 16;

    BackendExecutor(std::unique_ptr<B> backend, const DecoderSpec& spec, const WeightSource& source);

    [[nodiscard]] const DecoderSpec& spec() const override { return decoder_->spec(); }
    [[nodiscard]] BackendContract contract() const override { return backend_->contract(); }
    [[nodiscard]] DeviceMemory memory_info() const override { return backend_->memory_info(); }
    [[nodiscard]] std::unique_ptr<SequenceState> new_sequence(int64_t max_tokens) const override;
    void eval(SequenceState& seq, std::span<const int32_t> tokens, std::span<const int32_t> logit_rows, float* logits,
              const std::function<bool()>& cancelled) const override;

    [[nodiscard]] const std::string& kv_device() const override { return device_; }
    [[nodiscard]] KvGeometry kv_geometry(int64_t block_size, DType dtype) const override {
        return decoder_->kv_geometry(block_size, dtype);
    }
    [[nodiscard]] size_t kv_block_bytes(const KvGeometry& geometry) const override {
        return kv_canonical_block_bytes(geometry);
    }
    [[nodiscard]] std::shared_ptr<KvStore> new_kv_store(const KvGeometry& geometry, int64_t n_blocks) const override;
    [[nodiscard]] std::unique_ptr<StepWorkspace> new_workspace(int64_t max_tokens, int64_t max_logit_rows) const override;
    void step(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch, float* logits) const override;
    void step_argmax(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch, int32_t* ids) const override;
    void step_sample(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch, const SampleRows& rows,
                     int32_t* ids) const override;
    void launch_step(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch, const SampleRows* rows) const override;
    void finish_step(StepWorkspace& ws, int64_t n_logit_rows, int32_t* ids) const override;
    [[nodiscard]] bool queues_steps() const override { return B::kQueuedOps; }
    void copy_block(KvStore& kv, int32_t src, int32_t dst) const override;
    void read_block(const KvStore& kv, int32_t block, std::span<std::byte> out) const override;
    void write_block(KvStore& kv, int32_t block, std::span<const std::byte> in) const override;

    [[nodiscard]] B& backend() const { return *backend_; }
    [[nodiscard]] const Decoder<B>& decoder() const { return *decoder_; }

private:
    void forward_step(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch, float* logits, int32_t* ids,
                      const SampleRows* sampling = nullptr) const;
    // The decoder workspace behind `ws`, or INLAY_ERR_INTERNAL for another executor's.
    [[nodiscard]] typename Decoder<B>::Workspace& workspace_of(StepWorkspace& ws) const;

    std::unique_ptr<B> backend_;
    std::unique_ptr<Decoder<B>> decoder_;
    std::string device_;
    // Held by eval, step and the block moves when !B::kConcurrentForward: a backend with
    // one stream (and CUDA graphs recording it) runs one of them at a time.
    mutable std::mutex forward_mutex_;
    [[nodiscard]] std::unique_lock<std::mutex> serial_lock() const;
};

}  // namespace inlay
