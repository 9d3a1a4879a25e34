#include "core/thread_pool.h"

#include <algorithm>
#include <utility>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define INLAY_CPU_RELAX() _mm_pause()
#else
#define INLAY_CPU_RELAX() ((void)0)
#endif

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace inlay {
namespace {

// Raw futexes: libstdc++ 12's std::atomic::wait can lose wake-ups (seen here as a
// hang), so the pool sleeps and wakes through the kernel directly.
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void futex_wake_all(std::atomic<uint32_t>& word) {
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

// Spin this many rounds before sleeping: covers the gap between the regions of one
// forward pass (tens of microseconds) without burning a core when idle.
constexpr int kSpinRounds = 20000;
}  // namespace

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    n_threads_ = n_threads;
    workers_.reserve(static_cast<size_t>(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    futex_wake_all(generation_);
    for (auto& t : workers_) t.join();
}

void ThreadPool::run_task(int ith) noexcept {
    try {
        task_(task_ctx_, ith, n_threads_);
    } catch (...) {
        std::lock_guard lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
    }
}

void ThreadPool::run_impl(TaskFn fn, void* ctx) {
    std::lock_guard region(region_mutex_);
    if (n_threads_ == 1) {
        fn(ctx, 0, 1);
        return;
    }
    task_ = fn;
    task_ctx_ = ctx;
    error_ = nullptr;
    pending_.store(static_cast<uint32_t>(n_threads_ - 1), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_acq_rel);  // publishes task_ and pending_
    futex_wake_all(generation_);

    run_task(0);

    for (int spins = 0; pending_.load(std::memory_order_acquire) != 0;) {
        if (++spins < kSpinRounds) {
            INLAY_CPU_RELAX();
        } else {
            const uint32_t p = pending_.load(std::memory_order_acquire);
            if (p != 0) futex_wait(pending_, p);
        }
    }
    task_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void ThreadPool::worker_loop(int ith) {
    // Generation 0 is the pool's initial state; reading the counter here instead could
    // skip a region that started before this thread did.
    uint32_t seen = 0;
    for (;;) {
        uint32_t now = generation_.load(std::memory_order_acquire);
        for (int spins = 0; now == seen; now = generation_.load(std::memory_order_acquire)) {
            if (++spins < kSpinRounds) {
                INLAY_CPU_RELAX();
            } else {
                futex_wait(generation_, seen);
            }
        }
        seen = now;
        if (stop_.load(std::memory_order_acquire)) return;
        run_task(ith);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) futex_wake_all(pending_);
    }
}

}  // namespace inlay
