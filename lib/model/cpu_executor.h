// CpuExecutor: Executor over Decoder<CpuBackend>.
#pragma once

#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "model/decoder.h"
#include "model/executor.h"

namespace inlay {

class CpuExecutor final : public Executor {
public:
    // Largest number of tokens run through the decoder at once; longer prompts are split.
    static constexpr int64_t kMaxBatch = 512;
    static constexpr int64_t kBlockSize = 16;

    CpuExecutor(int n_threads, const DecoderSpec& spec, const WeightSource& source);

    [[nodiscard]] const DecoderSpec& spec() const override { return decoder_->spec(); }
    [[nodiscard]] std::unique_ptr<SequenceState> new_sequence(int64_t max_tokens) const override;
    void eval(SequenceState& seq, std::span<const int32_t> tokens, std::span<const int32_t> logit_rows, float* logits,
              const std::function<bool()>& cancelled) const override;

    [[nodiscard]] const std::string& kv_device() const override;
    [[nodiscard]] KvGeometry kv_geometry(int64_t block_size, DType dtype) const override;
    [[nodiscard]] std::shared_ptr<KvStore> new_kv_store(const KvGeometry& geometry, int64_t n_blocks) const override;
    [[nodiscard]] std::unique_ptr<StepWorkspace> new_workspace(int64_t max_tokens, int64_t max_logit_rows) const override;
    void step(KvStore& kv, StepWorkspace& ws, std::span<const int32_t> tokens, const BatchLayout& layout,
              std::span<const int32_t> logit_rows, float* logits) const override;
    void copy_block(KvStore& kv, int32_t src, int32_t dst) const override;
    void read_block(const KvStore& kv, int32_t block, std::span<std::byte> out) const override;
    void write_block(KvStore& kv, int32_t block, std::span<const std::byte> in) const override;

    [[nodiscard]] CpuBackend& backend() const { return *backend_; }

private:
    std::unique_ptr<CpuBackend> backend_;
    std::unique_ptr<Decoder<CpuBackend>> decoder_;
};

}  // namespace inlay
