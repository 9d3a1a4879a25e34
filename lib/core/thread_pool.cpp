#include "core/thread_pool.h"

#include <algorithm>
#include <utility>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define INLAY_CPU_RELAX() _mm_pause()
#else
#define INLAY_CPU_RELAX() ((void)0)
#endif

namespace inlay {
namespace {

// Raw futexes: libstdc++ 12's std::atomic::wait lost wake-ups here (a hang), so the
// pool sleeps and wakes through the kernel directly.
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void futex_wake_all(std::atomic<uint32_t>& word) {
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

// Spin this many rounds before sleeping: covers the gap between the regions of one
// forward pass without burning a core when the pool is idle.
constexpr int kSpinRounds = 4000;
constexpr uint64_t kChunkMask = 0xffffffffu;
// Lines each idle step asks for per stream: a handful, so a thread sees its next work
// within a few hundred nanoseconds, and a core's miss buffers are not flooded at once.
constexpr size_t kIdleStepBytes = 4 * 64;

// run_ranges' slots: a 16-bit generation tag and two 24-bit unit indices in one word, so
// that a range is claimed or shortened by one compare-exchange.
constexpr int kRangeBits = 24;
constexpr uint64_t kRangeMask = (uint64_t{1} << kRangeBits) - 1;
constexpr uint64_t kTagMask = 0xffff;
constexpr uint64_t pack_range(uint64_t tag, size_t begin, size_t end) {
    return (tag << (2 * kRangeBits)) | (static_cast<uint64_t>(begin) << kRangeBits) | static_cast<uint64_t>(end);
}
// An owner takes all but 1/kRangeTailDivisor of what is left of its range at a time, so
// that a run is one or two calls and only its tail is left for the other threads: each
// further call costs the kernels their prefetch ramp (they ask for rows ahead only within
// their own piece). Zen 5, 2 threads, decode, alternating runs against equal-shares chunks:
// taking halves was no faster than those chunks; all but 1/16 was 10-16% faster on
// SmolLM2 shape Q4_K_M, 6% (median) on Q8_0, 3-12% on stories15M Q8_0.
constexpr size_t kRangeTailDivisor = 16;
constexpr uint64_t range_tag(uint64_t v) { return v >> (2 * kRangeBits); }
constexpr size_t range_begin(uint64_t v) { return static_cast<size_t>((v >> kRangeBits) & kRangeMask); }
constexpr size_t range_end(uint64_t v) { return static_cast<size_t>(v & kRangeMask); }

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    n_threads_ = n_threads;
    idle_ = std::make_unique<IdleSlot[]>(static_cast<size_t>(n_threads_));
    ranges_ = std::make_unique<RangeSlot[]>(static_cast<size_t>(n_threads_));
    workers_.reserve(static_cast<size_t>(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    futex_wake_all(generation_);
    for (auto& t : workers_) t.join();
}

void ThreadPool::work_on(uint32_t gen, int thread) noexcept {
    if (const uint64_t region = region_.load(std::memory_order_acquire);
        (region >> 32) == gen && (region & kRangesFlag) != 0) {
        work_on_ranges(gen, thread);
        return;
    }
    for (;;) {
        in_flight_.fetch_add(1, std::memory_order_acq_rel);
        uint64_t w = work_.load(std::memory_order_acquire);
        // The chunk count of region `gen` only: a worker that arrives after the caller
        // has finished region `gen` and begun writing the next one must not compare the
        // old claim counter with the new count (nor with a run_ranges region's flag).
        const uint64_t region = region_.load(std::memory_order_acquire);
        const uint64_t n_chunks =
            (region >> 32) == gen && (region & kRangesFlag) == 0 ? (region & kChunkMask) : 0;
        bool claimed = false;
        while ((w >> 32) == gen && (w & kChunkMask) < n_chunks) {
            if (work_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
                claimed = true;
                break;
            }
        }
        if (!claimed) {
            in_flight_.fetch_sub(1, std::memory_order_acq_rel);
            return;
        }
        // A successful claim in region `gen` means the caller is still inside run_impl,
        // so task_ and task_ctx_ are those of this region.
        try {
            task_(task_ctx_, static_cast<size_t>(w & kChunkMask));
        } catch (...) {
            std::lock_guard lock(error_mutex_);
            if (!error_) error_ = std::current_exception();
        }
        in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

bool ThreadPool::claim_own_range(uint64_t tag, int thread, size_t& begin, size_t& end) noexcept {
    std::atomic<uint64_t>& slot = ranges_[static_cast<size_t>(thread)].range;
    uint64_t v = slot.load(std::memory_order_acquire);
    while (range_tag(v) == tag && range_begin(v) < range_end(v)) {
        const size_t b = range_begin(v), e = range_end(v);
        size_t take = std::min(e - b, std::max(min_grain_, (e - b) - (e - b) / kRangeTailDivisor));
        if (max_grain_ != 0) take = std::min(take, max_grain_);
        if (slot.compare_exchange_weak(v, pack_range(tag, b + take, e), std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
            begin = b;
            end = b + take;
            return true;
        }
    }
    return false;
}

bool ThreadPool::steal_range(uint64_t tag, int thread) noexcept {
    for (;;) {
        // The fullest other range of this region.
        int victim = -1;
        uint64_t seen = 0;
        size_t most = 0;
        for (int t = 0; t < n_threads_; ++t) {
            if (t == thread) continue;
            const uint64_t v = ranges_[static_cast<size_t>(t)].range.load(std::memory_order_acquire);
            if (range_tag(v) != tag || range_begin(v) >= range_end(v)) continue;
            if (const size_t left = range_end(v) - range_begin(v); left > most) {
                most = left;
                victim = t;
                seen = v;
            }
        }
        if (victim < 0) return false;
        // Its back half becomes this thread's range. The units are in no slot between the
        // two stores, but this thread holds in_flight_, so the region cannot end before it
        // has run them.
        const size_t b = range_begin(seen), e = range_end(seen);
        const size_t split = e - (e - b + 1) / 2;
        if (ranges_[static_cast<size_t>(victim)].range.compare_exchange_strong(
                seen, pack_range(tag, b, split), std::memory_order_acq_rel, std::memory_order_acquire)) {
            ranges_[static_cast<size_t>(thread)].range.store(pack_range(tag, split, e), std::memory_order_release);
            return true;
        }
    }
}

void ThreadPool::work_on_ranges(uint32_t gen, int thread) noexcept {
    const uint64_t tag = gen & kTagMask;
    // Counted in flight once for all its pieces: the counter's line moves between the
    // cores on every change (~0.25 us on the 2-core VMs), the slots' only at a steal.
    in_flight_.fetch_add(1, std::memory_order_acq_rel);
    for (;;) {
        size_t begin = 0, end = 0;
        bool claimed = claim_own_range(tag, thread, begin, end);
        while (!claimed && steal_range(tag, thread)) claimed = claim_own_range(tag, thread, begin, end);
        if (!claimed) break;
        // A claim tagged `gen` means the caller is still inside run_ranges_impl (it waits
        // for in_flight_), so range_task_ and task_ctx_ are this region's.
        try {
            range_task_(task_ctx_, begin, end);
        } catch (...) {
            std::lock_guard lock(error_mutex_);
            if (!error_) error_ = std::current_exception();
        }
    }
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
}

void ThreadPool::run_ranges_impl(size_t n_units, size_t min_grain, size_t max_grain, RangeFn fn, void* ctx) {
    static_assert(kRangeMask == kMaxRangeUnits);
    if (n_units > kRangeMask) {  // beyond the packed indices: equal parts claimed as chunks
        const size_t parts = static_cast<size_t>(n_threads_) * kChunksPerThread;
        run(parts, [&](size_t c) {
            if (const size_t b = n_units * c / parts, e = n_units * (c + 1) / parts; b < e) fn(ctx, b, e);
        });
        return;
    }
    std::lock_guard region(region_mutex_);
    const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
    range_task_ = fn;
    task_ctx_ = ctx;
    min_grain_ = std::max<size_t>(min_grain, 1);
    max_grain_ = max_grain == 0 ? 0 : std::max(max_grain, min_grain_);
    error_ = nullptr;
    for (int t = 0; t < n_threads_; ++t) {
        const Share share = range_share(n_units, t);
        ranges_[static_cast<size_t>(t)].range.store(pack_range(gen & kTagMask, share.begin, share.end),
                                                    std::memory_order_release);
    }
    region_.store((static_cast<uint64_t>(gen) << 32) | kRangesFlag, std::memory_order_release);
    publish(gen);
    work_on_ranges(gen, 0);
    finish_region();
}

void ThreadPool::run_impl(size_t n_chunks, ChunkFn fn, void* ctx) {
    if (n_chunks >= kRangesFlag) {  // beyond the packed count: no pool needed for such a split
        for (size_t c = 0; c < n_chunks; ++c) fn(ctx, c);
        return;
    }
    std::lock_guard region(region_mutex_);
    const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
    task_ = fn;
    task_ctx_ = ctx;
    error_ = nullptr;
    region_.store((static_cast<uint64_t>(gen) << 32) | n_chunks, std::memory_order_release);
    work_.store(static_cast<uint64_t>(gen) << 32, std::memory_order_release);  // publishes the task
    publish(gen);
    work_on(gen, 0);
    finish_region();
}

void ThreadPool::publish(uint32_t gen) {
    // seq_cst store then load (against the workers' seq_cst announce-then-check): at
    // least one side sees the other, so a sleeping worker is woken. A miss would only
    // leave it asleep for this region, since the caller can do every chunk itself.
    generation_.store(gen, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(generation_);
}

void ThreadPool::finish_region() {
    // Nothing is left to claim; wait for the work still running elsewhere.
    while (in_flight_.load(std::memory_order_acquire) != 0) {
        idle_step(0);
        INLAY_CPU_RELAX();
    }
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void ThreadPool::set_idle_reads(std::span<const IdleStream> streams) {
    for (int t = 0; t < n_threads_; ++t) {
        IdleSlot& slot = idle_[static_cast<size_t>(t)];
        for (int i = 0; i < kIdleStreams; ++i) {
            const size_t at = static_cast<size_t>(t * kIdleStreams + i);
            const IdleStream s = at < streams.size() ? streams[at] : IdleStream{};
            slot.begin[i].store(static_cast<const char*>(s.begin), std::memory_order_relaxed);
            slot.bytes[i].store(s.begin ? s.bytes : 0, std::memory_order_relaxed);
        }
        // A plain store, not a locked add: a worker reads its slot's version on every
        // idle step, so a locked instruction here waited for the line to come back from
        // the worker's core (~0.25 us on the 2-core VMs) at every decode region's start.
        // Two callers racing may publish one version for two sets of streams; a worker
        // then keeps reading the first set, which costs nothing but the reads.
        slot.version.store(slot.version.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }
}

void ThreadPool::idle_step(int thread) noexcept {
    IdleSlot& slot = idle_[static_cast<size_t>(thread)];
    const uint32_t version = slot.version.load(std::memory_order_acquire);
    size_t done = slot.done.load(std::memory_order_relaxed);
    if (version != slot.seen_version) {  // new streams: start from their beginnings
        slot.seen_version = version;
        done = 0;
        slot.done.store(0, std::memory_order_relaxed);
    }
    size_t step = 0;
    for (int i = 0; i < kIdleStreams; ++i) {
        const size_t bytes = slot.bytes[i].load(std::memory_order_relaxed);
        const char* begin = slot.begin[i].load(std::memory_order_relaxed);
        // A stream being replaced can pair one stream's start with another's length: only
        // the addresses are computed (as integers), and prefetches of them never fault.
        if (done >= bytes || begin == nullptr) continue;
        const uintptr_t p = reinterpret_cast<uintptr_t>(begin) + done;
        const size_t n = std::min(kIdleStepBytes, bytes - done);
        // Into L2 (locality 2): a waiting thread's reads are for its next region, not for
        // what it is doing now, and the streams can be larger than L1.
        for (size_t o = 0; o < n; o += 64) __builtin_prefetch(reinterpret_cast<const void*>(p + o), 0, 2);
        step = std::max(step, n);
    }
    if (step != 0) slot.done.store(done + step, std::memory_order_relaxed);
}

size_t ThreadPool::idle_bytes_read(int thread) const {
    if (thread < 0 || thread >= n_threads_) return 0;
    return idle_[static_cast<size_t>(thread)].done.load(std::memory_order_relaxed);
}

void ThreadPool::worker_loop(int thread) {
    uint32_t seen = 0;  // the pool's initial generation
    for (;;) {
        uint32_t now = generation_.load(std::memory_order_acquire);
        for (int spins = 0; now == seen; now = generation_.load(std::memory_order_acquire)) {
            if (++spins < kSpinRounds) {
                idle_step(thread);
                INLAY_CPU_RELAX();
                continue;
            }
            sleepers_.fetch_add(1, std::memory_order_seq_cst);
            // Re-check after announcing ourselves: a region published before the
            // announcement would not have woken us.
            if (generation_.load(std::memory_order_seq_cst) == seen) futex_wait(generation_, seen);
            sleepers_.fetch_sub(1, std::memory_order_acq_rel);
            spins = 0;
        }
        seen = now;
        if (stop_.load(std::memory_order_acquire)) return;
        work_on(now, thread);
    }
}

}  // namespace inlay
