// Engine: construction, sequences (open/close/fork/reset/truncate/snapshot/restore),
// requests (submit/cancel/finish), caps and metrics. The scheduler thread's loop lives
// in scheduler.cpp.
#include "runtime/engine.h"
#include "runtime/engine_entry.h"  // QueuedStep holds entries

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace inlay {

// Lets other engines of a shared pool reach this one safely: the pool's callback holds
// the Pressure, and the engine detaches itself under its mutex before it goes away.
struct Engine::Pressure {
    std::mutex mutex;
    Engine* engine = nullptr;
};

std::optional<int32_t> Request::next() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !queue_.empty() || ended_ || cancel_.load(std::memory_order_acquire); });
    if (cancel_.load(std::memory_order_acquire) || queue_.empty()) return std::nullopt;
    const int32_t token = queue_.front();
    queue_.pop_front();
    taken_.fetch_add(1, std::memory_order_acq_rel);
    // The scheduler pauses a request `lookahead` tokens ahead: wake it when it may resume.
    const bool may_resume = static_cast<int64_t>(queue_.size()) + 1 >= lookahead;
    lock.unlock();
    if (may_resume && on_taken_) on_taken_();
    return token;
}

void Request::wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return ended_ || cancel_.load(std::memory_order_acquire); });
}

Engine::Engine(std::shared_ptr<const Model> model, std::shared_ptr<KvBlockPool> pool, const EngineOptions& options)
    : model_(std::move(model)), pool_(std::move(pool)), options_(options) {
    if (!model_ || !pool_) fail(INLAY_ERR_INVALID_ARGUMENT, "Engine: model and pool are required");
    if (options_.step_tokens < 1 || options_.max_running < 1 || options_.max_logit_rows < 1)
        fail(INLAY_ERR_INVALID_ARGUMENT, "Engine: step_tokens, max_running and max_logit_rows must be positive");
    options_.max_logit_rows = std::min(options_.max_logit_rows, options_.step_tokens);
    options_.max_running = std::min(options_.max_running, options_.max_logit_rows);
    const Executor& ex = model_->executor();
    const KvGeometry& g = pool_->geometry();
    if (pool_->store().device() != ex.kv_device() || ex.kv_geometry(g.block_size, g.dtype) != g)
        fail(INLAY_ERR_SHAPE_MISMATCH, "the KV pool's block geometry ({} layers x {} KV heads x {} dims, {} tokens) "
             "does not match the model's", g.n_layers, g.n_kv_heads, g.head_dim, g.block_size);
    block_size_ = g.block_size;
    workspace_ = ex.new_workspace(options_.step_tokens, options_.max_logit_rows);
    pipelining_ = resolve_pipelining(options_.pipelining, ex.queues_steps());
    step_logits_ = ZeroedArray<float>(static_cast<size_t>(options_.max_logit_rows * model_->spec().n_vocab));
    step_ids_.assign(static_cast<size_t>(options_.max_logit_rows), -1);
    pressure_ = std::make_shared<Pressure>();
    pressure_->engine = this;
    owner_ = pool_->add_owner([p = pressure_] {
        std::lock_guard lock(p->mutex);
        if (p->engine) p->engine->on_pressure();
    });
    scheduler_ = std::thread([this] { scheduler_loop(); });
}

Engine::~Engine() {
    {
        std::lock_guard lock(pressure_->mutex);
        pressure_->engine = nullptr;
    }
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    scheduler_.join();
    for (auto& seq : sequences_) {
        pool_->release_all(seq->blocks_);
        unbind_draft_locked(*seq);  // the scheduler is gone: nothing else runs
    }
    try {
        pool_->remove_owner(owner_);
    } catch (...) {  // a bookkeeping bug must not escape a destructor
    }
}

void Engine::notify_scheduler() {
    {
        std::lock_guard lock(mutex_);
        ++events_;
    }
    wake_.notify_all();
}

void Engine::on_pressure() {
    std::lock_guard lock(mutex_);
    release_idle_locked(-1);
}

// --- sequences ------------------------------------------------------------------------

namespace {

void require_idle(const Sequence& seq, bool active, const char* what) {
    if (active) fail(INLAY_ERR_BUSY, "{}: the session is in use by a running request", what);
    (void)seq;
}

}  // namespace

Sequence* Engine::open(int64_t context_length) {
    if (context_length <= 0) fail(INLAY_ERR_INVALID_ARGUMENT, "a sequence needs a positive context length");
    std::lock_guard lock(mutex_);
    sequences_.push_back(std::unique_ptr<Sequence>(new Sequence(next_sequence_id_++, context_length)));
    return sequences_.back().get();
}

void Engine::close(Sequence* seq) {
    if (!seq) return;
    std::lock_guard lock(mutex_);
    const auto it = std::find_if(sequences_.begin(), sequences_.end(), [&](const auto& s) { return s.get() == seq; });
    if (it == sequences_.end()) fail(INLAY_ERR_INTERNAL, "Engine::close: unknown sequence");
    require_idle(*seq, seq->active_, "close");
    pool_->release_all(seq->blocks_);
    unbind_draft_locked(*seq);
    sequences_.erase(it);
}

Sequence* Engine::fork(Sequence& source) {
    std::lock_guard lock(mutex_);
    require_idle(source, source.active_, "fork");
    auto copy = std::unique_ptr<Sequence>(new Sequence(next_sequence_id_++, source.context_length_));
    copy->tokens_ = source.tokens_;
    copy->n_cached_ = source.n_cached_;
    for (const BlockId b : source.blocks_) {
        pool_->retain(b);
        copy->blocks_.push_back(b);
    }
    copy->last_used_ = ++clock_;
    copy->spec_ = source.spec_;  // the draft's KV is not shared: the copy's draft catches up
    if (source.draft_) {
        copy->draft_ = source.draft_;
        ++copy->draft_->users;
    }
    sequences_.push_back(std::move(copy));
    return sequences_.back().get();
}

void Engine::reset(Sequence& seq) {
    std::lock_guard lock(mutex_);
    require_idle(seq, seq.active_, "reset");
    pool_->release_all(seq.blocks_);
    trim_draft(seq, 0);
    seq.tokens_.clear();
    seq.n_cached_ = 0;
}

void Engine::truncate(Sequence& seq, int64_t n_tokens) {
    std::lock_guard lock(mutex_);
    require_idle(seq, seq.active_, "truncate");
    if (n_tokens < 0 || n_tokens > static_cast<int64_t>(seq.tokens_.size()))
        fail(INLAY_ERR_INVALID_ARGUMENT, "truncate to {} tokens of a conversation of {}", n_tokens, seq.tokens_.size());
    seq.tokens_.resize(static_cast<size_t>(n_tokens));
    release_from(seq, n_tokens);
    trim_draft(seq, n_tokens);
}

int64_t Engine::n_cached(const Sequence& seq) const {
    std::lock_guard lock(mutex_);
    return seq.n_cached_;
}

void Engine::release_from(Sequence& seq, int64_t n_tokens) {
    seq.n_cached_ = std::min(seq.n_cached_, std::max<int64_t>(0, n_tokens));
    pool_->release_tail(seq.blocks_, static_cast<size_t>(Sequence::blocks_for(seq.n_cached_, block_size_)));
}

SequenceImage Engine::snapshot(Sequence& seq) {
    SequenceImage image;
    std::vector<BlockId> pinned;
    {
        std::lock_guard lock(mutex_);
        require_idle(seq, seq.active_, "save");
        image.tokens = seq.tokens_;
        image.n_cached = seq.n_cached_;
        for (const BlockId b : seq.blocks_) {
            pool_->retain(b);  // shared now: nobody writes into it while we read
            pinned.push_back(b);
        }
    }
    struct Unpin {
        KvBlockPool& pool;
        std::vector<BlockId>& blocks;
        ~Unpin() { pool.release_all(blocks); }
    } unpin{*pool_, pinned};

    const KvStore& store = pool_->store();
    const KvGeometry& g = store.geometry();
    image.block_size = g.block_size;
    image.block_bytes = store.block_bytes();
    image.kv.resize(image.block_bytes * pinned.size());
    const Executor& ex = model_->executor();
    for (size_t i = 0; i < pinned.size(); ++i)
        ex.read_block(store, pinned[i], std::span<std::byte>(image.kv.data() + i * image.block_bytes, image.block_bytes));
    // Slots past n_cached hold stale data: zero them so equal sessions give equal files.
    const int64_t used = image.n_cached - static_cast<int64_t>(pinned.size() - (pinned.empty() ? 0 : 1)) * g.block_size;
    if (!pinned.empty() && used < g.block_size) {
        const size_t elem = g.dtype == DType::F16 ? 2 : 4;
        const size_t slab = static_cast<size_t>(g.block_size * g.head_dim) * elem;
        const size_t keep = static_cast<size_t>(used * g.head_dim) * elem;
        std::byte* last = image.kv.data() + (pinned.size() - 1) * image.block_bytes;
        for (size_t s = 0; s < static_cast<size_t>(2 * g.n_layers * g.n_kv_heads); ++s)
            std::memset(last + s * slab + keep, 0, slab - keep);
    }
    return image;
}

void Engine::restore(Sequence& seq, const SequenceImage& image) {
    const KvStore& store = pool_->store();
    const int64_t n_blocks = Sequence::blocks_for(image.n_cached, block_size_);
    if (image.block_size != block_size_ || image.block_bytes != store.block_bytes() || image.n_cached < 0 ||
        image.n_cached > static_cast<int64_t>(image.tokens.size()) ||
        image.kv.size() != static_cast<size_t>(n_blocks) * image.block_bytes)
        fail(INLAY_ERR_INTERNAL, "restore: the image does not fit this engine's KV geometry");
    if (static_cast<int64_t>(image.tokens.size()) > seq.context_length_)
        fail(INLAY_ERR_CONTEXT_FULL, "the saved conversation has {} tokens; the session's context length is {}",
             image.tokens.size(), seq.context_length_);
    const int64_t n_vocab = model_->spec().n_vocab;
    for (const int32_t t : image.tokens)
        if (t < 0 || t >= n_vocab) fail(INLAY_ERR_INVALID_TOKEN, "token id {} is outside the vocabulary [0, {})", t, n_vocab);

    std::vector<BlockId> fresh;
    {
        std::unique_lock lock(mutex_);
        require_idle(seq, seq.active_, "restore");
        pool_->release_all(seq.blocks_);
        seq.n_cached_ = 0;
        bool signalled = false;
        while (!pool_->allocate_n(owner_, n_blocks, fresh)) {
            if (release_idle_locked(n_blocks) > 0) continue;
            if (signalled || pool_->held_by_others(owner_) == 0)
                fail(INLAY_ERR_KV_FULL, "restoring {} tokens needs {} KV blocks; {} can be had without preempting",
                     image.n_cached, n_blocks, pool_->available(owner_));
            signalled = true;
            lock.unlock();
            pool_->signal_pressure(owner_);
            lock.lock();
        }
        seq.active_ = true;  // ours until installed: the scheduler leaves it alone
    }
    try {
        const Executor& ex = model_->executor();
        for (size_t i = 0; i < fresh.size(); ++i)
            ex.write_block(pool_->store(), fresh[i],
                           std::span<const std::byte>(image.kv.data() + i * image.block_bytes, image.block_bytes));
    } catch (...) {
        std::lock_guard lock(mutex_);
        pool_->release_all(fresh);
        seq.active_ = false;
        throw;
    }
    std::lock_guard lock(mutex_);
    trim_draft(seq, 0);
    seq.tokens_ = image.tokens;
    seq.blocks_ = std::move(fresh);
    seq.n_cached_ = image.n_cached;
    seq.active_ = false;
    seq.last_used_ = ++clock_;
    register_full_blocks(seq, 0);
}

// --- requests -------------------------------------------------------------------------

void Engine::submit(Sequence& seq, const std::shared_ptr<Request>& request) {
    if (!request) fail(INLAY_ERR_INTERNAL, "submit: no request");
    Request& req = *request;
    if (req.lookahead < 1) fail(INLAY_ERR_INVALID_ARGUMENT, "lookahead must be at least 1");
    const auto n_vocab = static_cast<int32_t>(model_->spec().n_vocab);
    if (req.kind == Request::Kind::generate) req.sampler_ = std::make_unique<Sampler>(req.sampling, n_vocab);
    req.seq_ = &seq;
    req.submitted = Request::Clock::now();
    req.on_taken_ = [this] { notify_scheduler(); };
    {
        std::lock_guard lock(mutex_);
        require_idle(seq, seq.active_, "generate");
        if (req.kind == Request::Kind::generate && seq.spec_.mode != SpeculationOptions::Mode::none) {
            if (!seq.policy_) seq.policy_ = std::make_unique<DraftPolicy>(seq.spec_.n_draft, seq.spec_.n_draft_min);
            seq.policy_->begin_request();
            req.policy_ = seq.policy_.get();
            if (seq.spec_.mode == SpeculationOptions::Mode::draft_model) {
                SamplingParams draft_sampling = req.sampling;
                draft_sampling.seed ^= 0x9e3779b97f4a7c15ull;  // its own random stream
                req.draft_sampler_ = std::make_unique<Sampler>(draft_sampling, n_vocab);
            }
        }
        seq.active_ = true;
        if (running_.empty() && waiting_.empty()) busy_since_ = std::chrono::steady_clock::now();
        req.arrival_ = next_arrival_++;
        waiting_.push_back(request);
        ++events_;
    }
    wake_.notify_all();
}

void Engine::cancel(Request& request) {
    request.cancel_.store(true, std::memory_order_release);
    {
        std::lock_guard lock(request.mutex_);
    }
    request.cv_.notify_all();
    notify_scheduler();
}

void Engine::finish(Request& request, int64_t keep) {
    {
        std::unique_lock lock(request.mutex_);
        if (!request.ended_) {
            lock.unlock();
            cancel(request);
            lock.lock();
            request.cv_.wait(lock, [&] { return request.ended_; });
        }
        // A pipelined step queued before the request ended may still write a block of its
        // sequence: the caller gets the sequence (to close, fork or save) once it is done.
        request.cv_.wait(lock, [&] { return request.queued_steps_ == 0; });
    }
    std::lock_guard lock(mutex_);
    Sequence& seq = *request.seq_;
    if (keep >= 0 && keep < static_cast<int64_t>(request.generated.size())) {
        request.generated.resize(static_cast<size_t>(keep));
        const int64_t n = std::min<int64_t>(request.prompt_end_ + keep, static_cast<int64_t>(seq.tokens_.size()));
        if (request.admitted_) {
            seq.tokens_.resize(static_cast<size_t>(n));
            release_from(seq, n);
            trim_draft(seq, n);
        }
    }
}

// --- caps and metrics -----------------------------------------------------------------

void Engine::set_block_cap(int64_t max_blocks) {
    pool_->set_cap(owner_, max_blocks);
    cap_changed_.store(true, std::memory_order_release);
    notify_scheduler();
}

EngineMetrics Engine::metrics() const {
    std::lock_guard lock(mutex_);
    EngineMetrics m = counters_;
    m.blocks = pool_->stats();
    m.blocks_held = pool_->held(owner_);
    m.block_cap = pool_->cap(owner_);
    m.block_size = block_size_;
    m.sequences = static_cast<int64_t>(sequences_.size());
    m.running = static_cast<int64_t>(running_.size());
    m.waiting = static_cast<int64_t>(waiting_.size());
    if (!running_.empty() || !waiting_.empty())
        m.busy_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since_).count();
    return m;
}

}  // namespace inlay
