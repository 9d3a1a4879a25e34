// ThreadPool: a fixed set of worker threads that run one parallel region at a time.
//
// Decoding a token runs a few hundred short parallel regions (one per matmul,
// attention, ...), so a region must start and end in microseconds. A region is a
// number of chunks; the calling thread and the workers claim chunks from one atomic
// counter until none are left. Workers spin briefly on a generation counter and then
// sleep on a futex. Because the caller claims chunks too, a region never waits for a
// worker that the OS has not scheduled (2-core machines running other work): the
// caller simply does the remaining chunks itself.
//
// Regions from different threads are serialised by a mutex, so one pool can serve
// several sessions at once. A chunk must not start another region (no nesting).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <type_traits>
#include <vector>

namespace inlay {

class ThreadPool {
public:
    // n_threads <= 0 means std::thread::hardware_concurrency().
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    // Threads that work on a region, the caller included.
    [[nodiscard]] int size() const { return n_threads_; }

    // Calls fn(chunk) for every chunk in [0, n_chunks), spread over the pool's threads,
    // and returns when all have finished. An exception thrown by fn is rethrown here
    // (the remaining chunks still run). The chunks are claimed one at a time from the
    // threads' own run_ranges shares (a max_grain of one): a claim moves no line between
    // the cores, and a thread starts on the same chunks in every region, so what it wrote
    // in one is still in its cache for the next. Zen 5, 2 threads, alternating runs
    // against claims from one shared counter: pp128 +5-15% through the prompt products'
    // row blocks, +3-12% more through parallel_for's pieces, attention +1.5% (pp512).
    // Counts beyond the ranges' packed indices take the shared counter.
    template <class Fn>
    void run(size_t n_chunks, Fn&& fn) {
        if (n_chunks == 0) return;
        if (n_threads_ == 1 || n_chunks == 1) {
            for (size_t c = 0; c < n_chunks; ++c) fn(c);
            return;
        }
        if (n_chunks <= kMaxRangeUnits) {
            run_ranges_impl(
                n_chunks, 1, /*max_grain=*/1,
                [](void* ctx, size_t begin, size_t end) {
                    for (size_t c = begin; c < end; ++c) (*static_cast<std::remove_reference_t<Fn>*>(ctx))(c);
                },
                static_cast<void*>(&fn));
            return;
        }
        run_impl(n_chunks,
                 [](void* ctx, size_t chunk) { (*static_cast<std::remove_reference_t<Fn>*>(ctx))(chunk); },
                 static_cast<void*>(&fn));
    }

    // Splits [0, n) into contiguous ranges and calls fn(begin, end) for each. Range
    // borders are multiples of `align` (e.g. so threads never share output cache lines).
    template <class Fn>
    void parallel_for(size_t n, Fn&& fn, size_t align = 1) {
        if (n == 0) return;
        const size_t units = (n + align - 1) / align;
        // A few chunks per thread balance uneven progress (run: each thread starts on the
        // same chunks, so the same rows, in every op).
        const size_t chunks = std::min(units, static_cast<size_t>(n_threads_) * kChunksPerThread);
        if (n_threads_ == 1 || chunks <= 1) {
            fn(size_t{0}, n);
            return;
        }
        run(chunks, [&](size_t c) {
            const size_t begin = std::min(n, units * c / chunks * align);
            const size_t end = std::min(n, units * (c + 1) / chunks * align);
            if (begin < end) fn(begin, end);
        });
    }

    // Calls fn(begin, end) on pieces covering [0, n_units) exactly once, for regions whose
    // threads should each stream one contiguous run (decode products: every thread reads
    // ahead along its own rows). Thread t owns its range_share(n_units, t) and takes nearly
    // all of what is left of it at a time (at least min_grain units); a thread whose range
    // is empty takes the back half of the fullest other range and goes on with that
    // (run takes one chunk at a time the same way). So each thread streams one long run, the
    // threads still finish close together whatever their speeds, and an unscheduled
    // worker's range is done by the others. Exceptions as for run.
    template <class Fn>
    void run_ranges(size_t n_units, size_t min_grain, Fn&& fn) {
        if (n_units == 0) return;
        if (n_threads_ == 1 || n_units == 1) {
            fn(size_t{0}, n_units);
            return;
        }
        run_ranges_impl(
            n_units, min_grain, /*max_grain=*/0,
            [](void* ctx, size_t begin, size_t end) { (*static_cast<std::remove_reference_t<Fn>*>(ctx))(begin, end); },
            static_cast<void*>(&fn));
    }

    // The units thread t (the caller is 0) starts on in a run_ranges region of n_units:
    // [begin, end). Callers that read ahead for a region's threads (set_idle_reads) read
    // these.
    struct Share {
        size_t begin, end;
    };
    [[nodiscard]] Share range_share(size_t n_units, int thread) const {
        const auto threads = static_cast<size_t>(n_threads_), t = static_cast<size_t>(thread);
        return {n_units * t / threads, n_units * (t + 1) / threads};
    }

    // Reads for waiting threads. Decoding is bound by memory bandwidth, yet every region
    // ends with threads waiting for the slowest one, and the workers wait while the caller
    // works alone between regions. A thread given streams here prefetches them in those
    // waits, a few cache lines per step, until it has work again or has read `bytes` of
    // each: the memory keeps delivering, and the next region starts on warm rows. A hint:
    // a stream may be stale or wrong at no cost but the read (prefetches never fault).
    struct IdleStream {
        const void* begin = nullptr;
        size_t bytes = 0;
    };
    static constexpr int kIdleStreams = 2;  // per thread
    // streams[t * kIdleStreams + i] is stream i of pool thread t (0: the calling thread);
    // threads past the span's end get none. Restarts every thread's walk.
    void set_idle_reads(std::span<const IdleStream> streams);
    // How far thread t has read into its streams (the longest), for tests. It never
    // passes a stream's end.
    [[nodiscard]] size_t idle_bytes_read(int thread) const;

private:
    static constexpr size_t kChunksPerThread = 4;
    using ChunkFn = void (*)(void* ctx, size_t chunk);
    using RangeFn = void (*)(void* ctx, size_t begin, size_t end);
    // In region_'s count: the region is a run_ranges one (so plain counts stay below it).
    static constexpr uint64_t kRangesFlag = uint64_t{1} << 31;

    void run_impl(size_t n_chunks, ChunkFn fn, void* ctx);
    // Units a run_ranges region can pack into its slots (kRangeMask in thread_pool.cpp).
    static constexpr size_t kMaxRangeUnits = (size_t{1} << 24) - 1;
    // max_grain (0: none) caps what an owner takes at a time: run's one chunk.
    void run_ranges_impl(size_t n_units, size_t min_grain, size_t max_grain, RangeFn fn, void* ctx);
    // The caller's side of every region: wakes the workers for generation `gen`, and,
    // once the caller finds nothing left to claim, waits for the rest and rethrows.
    void publish(uint32_t gen);
    void finish_region();
    // Claims and runs pieces of the ranges of region `gen` as thread `thread` until none
    // are left.
    void work_on_ranges(uint32_t gen, int thread) noexcept;
    bool claim_own_range(uint64_t tag, int thread, size_t& begin, size_t& end) noexcept;
    bool steal_range(uint64_t tag, int thread) noexcept;
    void worker_loop(int thread);
    // One step of thread `thread`'s idle reads (a no-op once they are done).
    void idle_step(int thread) noexcept;
    // Claims and runs chunks of the region of generation `gen` until none are left
    // (pieces of its ranges, as thread `thread`, for a run_ranges region).
    void work_on(uint32_t gen, int thread) noexcept;

    int n_threads_;
    std::vector<std::thread> workers_;
    std::mutex region_mutex_;  // one region at a time

    ChunkFn task_ = nullptr;
    void* task_ctx_ = nullptr;
    // High 32 bits: generation of the current region; low 32 bits: its chunk count. The
    // count carries its generation so that a late worker holding an old generation never
    // pairs that generation's claim counter with the next region's count (it would claim
    // a chunk the next region runs again).
    std::atomic<uint64_t> region_{0};
    // High 32 bits: generation of the current region; low 32 bits: next chunk to claim.
    std::atomic<uint64_t> work_{0};
    std::atomic<uint32_t> generation_{0};  // futex word the workers sleep on
    std::atomic<uint32_t> in_flight_{0};   // threads between "about to claim" and "done"
    std::atomic<uint32_t> sleepers_{0};
    std::atomic<bool> stop_{false};
    struct alignas(64) IdleSlot {
        std::atomic<const char*> begin[kIdleStreams] = {};
        std::atomic<size_t> bytes[kIdleStreams] = {};
        std::atomic<uint32_t> version{0};
        // The owner's walk: worker t owns slot t; slot 0 belongs to whichever caller
        // holds region_mutex_ (it reads only while waiting inside a region).
        uint32_t seen_version = 0;
        std::atomic<size_t> done{0};  // atomic only for idle_bytes_read
    };
    std::unique_ptr<IdleSlot[]> idle_;  // one per thread
    // run_ranges: thread t's range, packed as (generation tag, begin, end) so that a
    // thread that saw an older region never takes or writes units of this one.
    struct alignas(64) RangeSlot {
        std::atomic<uint64_t> range{0};
    };
    std::unique_ptr<RangeSlot[]> ranges_;  // one per thread
    RangeFn range_task_ = nullptr;
    size_t min_grain_ = 1;
    size_t max_grain_ = 0;  // 0: none
    std::mutex error_mutex_;
    std::exception_ptr error_;
};

}  // namespace inlay
