#include "model/cpu_executor.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace inlay {
namespace {

class CpuSequence final : public SequenceState {
public:
    CpuSequence(CpuBackend& backend, const Decoder<CpuBackend>& decoder, int64_t max_tokens)
        : max_tokens_(max_tokens),
          kv_(backend.alloc_kv(decoder.kv_geometry(CpuExecutor::kBlockSize, DType::F16), 0)) {}

    [[nodiscard]] int64_t n_cached() const override { return n_cached_; }
    void truncate(int64_t n) override {
        if (n < 0 || n > n_cached_) fail(INLAY_ERR_INTERNAL, "truncate to {} of {} cached tokens", n, n_cached_);
        n_cached_ = n;
    }
    [[nodiscard]] size_t kv_bytes() const override { return kv_.block_bytes() * static_cast<size_t>(kv_.n_blocks()); }

    // Makes room for n tokens in total: blocks are added as the sequence grows.
    void reserve(int64_t n) {
        if (n > max_tokens_) fail(INLAY_ERR_CONTEXT_FULL, "{} tokens exceed the context length {}", n, max_tokens_);
        const int64_t blocks = (n + CpuExecutor::kBlockSize - 1) / CpuExecutor::kBlockSize;
        if (blocks > kv_.n_blocks()) {
            kv_.resize(blocks);
            block_table_.resize(static_cast<size_t>(blocks));
            std::iota(block_table_.begin(), block_table_.end(), 0);
        }
    }

    int64_t max_tokens_;
    int64_t n_cached_ = 0;
    CpuBackend::KvStorage kv_;
    std::vector<int32_t> block_table_;
    std::unique_ptr<Decoder<CpuBackend>::Workspace> workspace_;  // made on first use
};

}  // namespace

CpuExecutor::CpuExecutor(int n_threads, const DecoderSpec& spec, const WeightSource& source)
    : backend_(std::make_unique<CpuBackend>(n_threads)),
      decoder_(std::make_unique<Decoder<CpuBackend>>(*backend_, spec, source)) {}

std::unique_ptr<SequenceState> CpuExecutor::new_sequence(int64_t max_tokens) const {
    return std::make_unique<CpuSequence>(*backend_, *decoder_, max_tokens);
}

void CpuExecutor::eval(SequenceState& state, std::span<const int32_t> tokens, std::span<const int32_t> logit_rows,
                       float* logits, const std::function<bool()>& cancelled) const {
    auto& seq = dynamic_cast<CpuSequence&>(state);
    const auto n = static_cast<int64_t>(tokens.size());
    const int64_t n_vocab = decoder_->spec().n_vocab;
    for (const int32_t t : tokens)
        if (t < 0 || t >= n_vocab) fail(INLAY_ERR_INVALID_TOKEN, "token id {} is outside the vocabulary [0, {})", t, n_vocab);
    for (size_t i = 0; i < logit_rows.size(); ++i)
        if (logit_rows[i] < 0 || logit_rows[i] >= n || (i > 0 && logit_rows[i] <= logit_rows[i - 1]))
            fail(INLAY_ERR_INTERNAL, "eval: logit rows must be ascending indices into the batch");
    seq.reserve(seq.n_cached_ + n);
    if (!seq.workspace_) {
        seq.workspace_ = std::make_unique<Decoder<CpuBackend>::Workspace>(decoder_->make_workspace(kMaxBatch, kMaxBatch));
    }

    std::vector<int32_t> positions, seq_ids, rows;
    size_t next_row = 0;
    for (int64_t start = 0; start < n; start += kMaxBatch) {
        if (start > 0 && cancelled && cancelled()) fail(INLAY_ERR_CANCELLED, "cancelled during prompt processing");
        const int64_t count = std::min(kMaxBatch, n - start);
        positions.resize(static_cast<size_t>(count));
        std::iota(positions.begin(), positions.end(), static_cast<int32_t>(seq.n_cached_));
        seq_ids.assign(static_cast<size_t>(count), 0);
        rows.clear();
        const size_t first_row = next_row;
        while (next_row < logit_rows.size() && logit_rows[next_row] < start + count)
            rows.push_back(static_cast<int32_t>(logit_rows[next_row++] - start));
        const BatchSequence batch_seq{seq.block_table_, seq.n_cached_ + count};
        const BatchLayout layout{positions, seq_ids, std::span<const BatchSequence>(&batch_seq, 1)};
        decoder_->forward(tokens.subspan(static_cast<size_t>(start), static_cast<size_t>(count)), layout, seq.kv_,
                          *seq.workspace_, rows, logits + first_row * static_cast<size_t>(n_vocab));
        seq.n_cached_ += count;
    }
}

}  // namespace inlay

// --- batched steps over a shared store ----------------------------------------------------

namespace inlay {
namespace {

class CpuKvStore final : public KvStore {
public:
    CpuKvStore(const KvGeometry& geometry, int64_t n_blocks) : storage_(geometry) { storage_.resize(n_blocks); }
    [[nodiscard]] const KvGeometry& geometry() const override { return storage_.geometry(); }
    [[nodiscard]] int64_t n_blocks() const override { return storage_.n_blocks(); }
    [[nodiscard]] size_t block_bytes() const override { return storage_.block_bytes(); }
    [[nodiscard]] const std::string& device() const override { return cpu_device(); }
    static const std::string& cpu_device() {
        static const std::string name = "cpu";
        return name;
    }

    CpuBackend::KvStorage storage_;
};

class CpuWorkspace final : public StepWorkspace {
public:
    explicit CpuWorkspace(Decoder<CpuBackend>::Workspace ws) : ws_(std::move(ws)) {}
    [[nodiscard]] int64_t max_tokens() const override { return ws_.capacity; }
    [[nodiscard]] int64_t max_logit_rows() const override { return ws_.logit_capacity; }

    Decoder<CpuBackend>::Workspace ws_;
};

CpuKvStore& cpu_store(KvStore& kv) {
    auto* s = dynamic_cast<CpuKvStore*>(&kv);
    if (!s) fail(INLAY_ERR_INTERNAL, "a KV store of device '{}' given to the CPU executor", kv.device());
    return *s;
}

const CpuKvStore& cpu_store(const KvStore& kv) {
    const auto* s = dynamic_cast<const CpuKvStore*>(&kv);
    if (!s) fail(INLAY_ERR_INTERNAL, "a KV store of device '{}' given to the CPU executor", kv.device());
    return *s;
}

}  // namespace

const std::string& CpuExecutor::kv_device() const { return CpuKvStore::cpu_device(); }

KvGeometry CpuExecutor::kv_geometry(int64_t block_size, DType dtype) const {
    return decoder_->kv_geometry(block_size, dtype);
}

std::shared_ptr<KvStore> CpuExecutor::new_kv_store(const KvGeometry& geometry, int64_t n_blocks) const {
    if (n_blocks <= 0 || n_blocks > (int64_t{1} << 30))
        fail(INLAY_ERR_INVALID_ARGUMENT, "a KV store needs between 1 and 2^30 blocks, not {}", n_blocks);
    return std::make_shared<CpuKvStore>(geometry, n_blocks);
}

std::unique_ptr<StepWorkspace> CpuExecutor::new_workspace(int64_t max_tokens, int64_t max_logit_rows) const {
    if (max_tokens <= 0 || max_logit_rows <= 0 || max_logit_rows > max_tokens)
        fail(INLAY_ERR_INVALID_ARGUMENT, "workspace for {} tokens and {} logit rows", max_tokens, max_logit_rows);
    return std::make_unique<CpuWorkspace>(decoder_->make_workspace(max_tokens, max_logit_rows));
}

void CpuExecutor::step(KvStore& kv, StepWorkspace& ws, std::span<const int32_t> tokens, const BatchLayout& layout,
                       std::span<const int32_t> logit_rows, float* logits) const {
    auto& store = cpu_store(kv);
    auto* work = dynamic_cast<CpuWorkspace*>(&ws);
    if (!work) fail(INLAY_ERR_INTERNAL, "a workspace of another executor given to the CPU executor");
    if (store.geometry() != decoder_->kv_geometry(store.geometry().block_size, store.geometry().dtype))
        fail(INLAY_ERR_INTERNAL, "KV store geometry does not match the model");
    const int64_t n_vocab = decoder_->spec().n_vocab;
    for (const int32_t t : tokens)
        if (t < 0 || t >= n_vocab) fail(INLAY_ERR_INVALID_TOKEN, "token id {} is outside the vocabulary [0, {})", t, n_vocab);
    const auto n = static_cast<int64_t>(tokens.size());
    for (size_t i = 0; i < logit_rows.size(); ++i)
        if (logit_rows[i] < 0 || logit_rows[i] >= n || (i > 0 && logit_rows[i] <= logit_rows[i - 1]))
            fail(INLAY_ERR_INTERNAL, "step: logit rows must be ascending indices into the batch");
    for (const BatchSequence& s : layout.sequences)
        for (const int32_t b : s.block_table)
            if (b < 0 || b >= store.n_blocks()) fail(INLAY_ERR_INTERNAL, "step: block {} outside the store", b);
    for (size_t t = 0; t < layout.seq_of_token.size(); ++t)
        if (layout.seq_of_token[t] < 0 || static_cast<size_t>(layout.seq_of_token[t]) >= layout.sequences.size())
            fail(INLAY_ERR_INTERNAL, "step: token {} names sequence {}", t, layout.seq_of_token[t]);
    decoder_->forward(tokens, layout, store.storage_, work->ws_, logit_rows, logits);
}

void CpuExecutor::copy_block(KvStore& kv, int32_t src, int32_t dst) const {
    backend_->kv_copy_block(cpu_store(kv).storage_, src, dst);
}

void CpuExecutor::read_block(const KvStore& kv, int32_t block, std::span<std::byte> out) const {
    backend_->kv_read_block(cpu_store(kv).storage_, block, out);
}

void CpuExecutor::write_block(KvStore& kv, int32_t block, std::span<const std::byte> in) const {
    backend_->kv_write_block(cpu_store(kv).storage_, block, in);
}

}  // namespace inlay
