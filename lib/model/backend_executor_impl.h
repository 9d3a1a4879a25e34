// Definitions of BackendExecutor<B>; included by the one .cpp per backend that
// instantiates it (with decoder_impl.h).
#pragma once

#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "model/backend_executor.h"

namespace inlay {
namespace detail {

// One sequence with a private, growable set of blocks (table 0, 1, 2, ...).
template <Backend B>
class PrivateSequence final : public SequenceState {
public:
    PrivateSequence(B& backend, const Decoder<B>& decoder, int64_t max_tokens)
        : max_tokens_(max_tokens),
          kv_(backend.alloc_kv(decoder.kv_geometry(BackendExecutor<B>::kBlockSize, DType::F16), 0)) {}

    [[nodiscard]] int64_t n_cached() const override { return n_cached_; }
    void truncate(int64_t n) override {
        if (n < 0 || n > n_cached_) fail(INLAY_ERR_INTERNAL, "truncate to {} of {} cached tokens", n, n_cached_);
        n_cached_ = n;
    }
    [[nodiscard]] size_t kv_bytes() const override {
        return kv_canonical_block_bytes(kv_.geometry()) * static_cast<size_t>(kv_.n_blocks());
    }

    // Makes room for n tokens in total: blocks are added as the sequence grows.
    void reserve(B& backend, int64_t n) {
        if (n > max_tokens_) fail(INLAY_ERR_CONTEXT_FULL, "{} tokens exceed the context length {}", n, max_tokens_);
        constexpr int64_t bs = BackendExecutor<B>::kBlockSize;
        const int64_t blocks = (n + bs - 1) / bs;
        if (blocks > kv_.n_blocks()) {
            backend.resize_kv(kv_, blocks);
            block_table_.resize(static_cast<size_t>(blocks));
            std::iota(block_table_.begin(), block_table_.end(), 0);
        }
    }

    int64_t max_tokens_;
    int64_t n_cached_ = 0;
    typename B::KvStorage kv_;
    std::vector<int32_t> block_table_;
    BatchBuilder batch_;
    std::unique_ptr<typename Decoder<B>::Workspace> workspace_;  // made on first use
};

template <Backend B>
class BackendKvStore final : public KvStore {
public:
    BackendKvStore(typename B::KvStorage storage, const std::string& device)
        : storage_(std::move(storage)), device_(device) {}
    [[nodiscard]] const KvGeometry& geometry() const override { return storage_.geometry(); }
    [[nodiscard]] int64_t n_blocks() const override { return storage_.n_blocks(); }
    [[nodiscard]] size_t block_bytes() const override { return kv_canonical_block_bytes(storage_.geometry()); }
    [[nodiscard]] const std::string& device() const override { return device_; }

    typename B::KvStorage storage_;
    std::string device_;
};

template <Backend B>
class BackendWorkspace final : public StepWorkspace {
public:
    BackendWorkspace(typename Decoder<B>::Workspace ws, const Decoder<B>* owner) : ws_(std::move(ws)), owner_(owner) {}
    [[nodiscard]] int64_t max_tokens() const override { return ws_.capacity; }
    [[nodiscard]] int64_t max_logit_rows() const override { return ws_.logit_capacity; }

    typename Decoder<B>::Workspace ws_;
    // The decoder it was made for: its buffers are sized for that model, and a backend that
    // replays recorded steps (CUDA graphs) keeps that model's launches in it.
    const Decoder<B>* owner_;
};

// The backend store behind `kv` (const or not), or INLAY_ERR_INTERNAL for another executor's.
template <class Store, class Kv>
auto& store_of(Kv& kv, const std::string& device) {
    using S = std::conditional_t<std::is_const_v<Kv>, const Store, Store>;
    auto* s = dynamic_cast<S*>(&kv);
    if (!s || kv.device() != device)
        fail(INLAY_ERR_INTERNAL, "a KV store of device '{}' given to the executor of '{}'", kv.device(), device);
    return *s;
}

// Runs a forward pass, once more when the backend says that none of it ran and it has
// switched off what failed (StepRetry: a CUDA graph the device refused).
template <class F>
void forward_retrying(F&& forward) {
    try {
        forward();
    } catch (const StepRetry& e) {
        log(LogLevel::info, "{}: the step runs again", e.what());
        forward();
    }
}

}  // namespace detail

template <Backend B>
BackendExecutor<B>::BackendExecutor(std::unique_ptr<B> backend, const DecoderSpec& spec, const WeightSource& source)
    : backend_(std::move(backend)),
      decoder_(std::make_unique<Decoder<B>>(*backend_, spec, source)),
      device_(backend_->device_name()) {}

template <Backend B>
std::unique_ptr<SequenceState> BackendExecutor<B>::new_sequence(int64_t max_tokens) const {
    auto lock = serial_lock();  // allocates on the backend's stream
    return std::make_unique<detail::PrivateSequence<B>>(*backend_, *decoder_, max_tokens);
}

template <Backend B>
void BackendExecutor<B>::eval(SequenceState& state, std::span<const int32_t> tokens, std::span<const int32_t> logit_rows,
                              float* logits, const std::function<bool()>& cancelled) const {
    auto* seq_ptr = dynamic_cast<detail::PrivateSequence<B>*>(&state);
    if (!seq_ptr) fail(INLAY_ERR_INTERNAL, "eval: a sequence of another executor");
    auto& seq = *seq_ptr;
    const auto n = static_cast<int64_t>(tokens.size());
    const int64_t n_vocab = decoder_->spec().n_vocab;
    // Checked before any chunk runs, so a bad id leaves the sequence unchanged.
    for (const int32_t t : tokens)
        if (t < 0 || t >= n_vocab) fail(INLAY_ERR_INVALID_TOKEN, "token id {} is outside the vocabulary [0, {})", t, n_vocab);
    for (size_t i = 0; i < logit_rows.size(); ++i)
        if (logit_rows[i] < 0 || logit_rows[i] >= n || (i > 0 && logit_rows[i] <= logit_rows[i - 1]))
            fail(INLAY_ERR_INTERNAL, "eval: logit rows must be ascending indices into the batch");
    // A backend with one stream runs one thing at a time: growing this sequence's blocks
    // (stream copies) must not land inside another thread's recorded step.
    auto lock = serial_lock();
    seq.reserve(*backend_, seq.n_cached_ + n);
    if (!seq.workspace_)
        seq.workspace_ = std::make_unique<typename Decoder<B>::Workspace>(decoder_->make_workspace(kMaxBatch, kMaxBatch));

    size_t next_row = 0;
    for (int64_t start = 0; start < n; start += kMaxBatch) {
        if (start > 0 && cancelled && cancelled()) fail(INLAY_ERR_CANCELLED, "cancelled during prompt processing");
        const int64_t count = std::min(kMaxBatch, n - start);
        BatchBuilder& batch = seq.batch_;
        batch.clear();
        const int32_t s = batch.add_sequence(seq.block_table_, seq.n_cached_ + count);
        const size_t first_row = next_row;
        for (int64_t i = 0; i < count; ++i) {
            const bool want = next_row < logit_rows.size() && logit_rows[next_row] == start + i;
            if (want) ++next_row;
            batch.add_token(tokens[static_cast<size_t>(start + i)], static_cast<int32_t>(seq.n_cached_ + i), s, want);
        }
        detail::forward_retrying([&] {
            decoder_->forward(batch.desc(), seq.kv_, *seq.workspace_,
                              logits + first_row * static_cast<size_t>(n_vocab));
        });
        seq.n_cached_ += count;
    }
}

template <Backend B>
std::shared_ptr<KvStore> BackendExecutor<B>::new_kv_store(const KvGeometry& geometry, int64_t n_blocks) const {
    if (n_blocks <= 0 || n_blocks > (int64_t{1} << 30))
        fail(INLAY_ERR_INVALID_ARGUMENT, "a KV store needs between 1 and 2^30 blocks, not {}", n_blocks);
    auto lock = serial_lock();  // allocates and clears on the backend's stream
    return std::make_shared<detail::BackendKvStore<B>>(backend_->alloc_kv(geometry, n_blocks), device_);
}

template <Backend B>
std::unique_ptr<StepWorkspace> BackendExecutor<B>::new_workspace(int64_t max_tokens, int64_t max_logit_rows) const {
    if (max_tokens <= 0 || max_logit_rows <= 0 || max_logit_rows > max_tokens)
        fail(INLAY_ERR_INVALID_ARGUMENT, "workspace for {} tokens and {} logit rows", max_tokens, max_logit_rows);
    auto lock = serial_lock();
    return std::make_unique<detail::BackendWorkspace<B>>(decoder_->make_workspace(max_tokens, max_logit_rows),
                                                         decoder_.get());
}

template <Backend B>
void BackendExecutor<B>::step(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch, float* logits) const {
    forward_step(kv, ws, batch, logits, nullptr);
}

template <Backend B>
void BackendExecutor<B>::step_argmax(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch, int32_t* ids) const {
    forward_step(kv, ws, batch, nullptr, ids);
}

template <Backend B>
void BackendExecutor<B>::step_sample(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch, const SampleRows& rows,
                                     int32_t* ids) const {
    forward_step(kv, ws, batch, nullptr, ids, &rows);
}

template <Backend B>
void BackendExecutor<B>::launch_step(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch,
                                     const SampleRows* rows) const {
    auto& store = detail::store_of<detail::BackendKvStore<B>>(kv, device_);
    auto& work = workspace_of(ws);
    auto lock = serial_lock();
    detail::forward_retrying([&] { decoder_->launch(batch, store.storage_, work, rows); });
}

template <Backend B>
void BackendExecutor<B>::finish_step(StepWorkspace& ws, int64_t n_logit_rows, int32_t* ids) const {
    // Waits for the workspace's own ids only: nothing is queued, so no lock.
    decoder_->read_ids(workspace_of(ws), n_logit_rows, ids);
}

template <Backend B>
typename Decoder<B>::Workspace& BackendExecutor<B>::workspace_of(StepWorkspace& ws) const {
    auto* work = dynamic_cast<detail::BackendWorkspace<B>*>(&ws);
    if (!work || work->owner_ != decoder_.get())
        fail(INLAY_ERR_INTERNAL, "a workspace of another executor given to the executor of '{}'", device_);
    return work->ws_;
}

template <Backend B>
void BackendExecutor<B>::forward_step(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch, float* logits,
                                      int32_t* ids, const SampleRows* sampling) const {
    auto& store = detail::store_of<detail::BackendKvStore<B>>(kv, device_);
    auto& work = workspace_of(ws);
    auto lock = serial_lock();
    detail::forward_retrying([&] {  // forward validates the batch once
        decoder_->forward(batch, store.storage_, work, logits, ids, sampling);
    });
}

template <Backend B>
std::unique_lock<std::mutex> BackendExecutor<B>::serial_lock() const {
    std::unique_lock lock(forward_mutex_, std::defer_lock);
    if constexpr (!B::kConcurrentForward) lock.lock();
    return lock;
}

template <Backend B>
void BackendExecutor<B>::copy_block(KvStore& kv, int32_t src, int32_t dst) const {
    auto lock = serial_lock();
    backend_->kv_copy_block(detail::store_of<detail::BackendKvStore<B>>(kv, device_).storage_, src, dst);
}

template <Backend B>
void BackendExecutor<B>::read_block(const KvStore& kv, int32_t block, std::span<std::byte> out) const {
    auto& store = detail::store_of<detail::BackendKvStore<B>>(kv, device_);
    auto lock = serial_lock();
    backend_->kv_read_block(store.storage_, block, out);
}

template <Backend B>
void BackendExecutor<B>::write_block(KvStore& kv, int32_t block, std::span<const std::byte> in) const {
    auto lock = serial_lock();
    backend_->kv_write_block(detail::store_of<detail::BackendKvStore<B>>(kv, device_).storage_, block, in);
}

}  // namespace inlay
