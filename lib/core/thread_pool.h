// ThreadPool: a fixed set of worker threads that run one parallel region at a time.
//
// Decoding a token runs a few hundred short parallel regions (one per matmul,
// attention, ...), so waking workers must cost microseconds: workers spin briefly
// on an atomic generation counter before they sleep on it (a futex). The calling thread takes part as thread 0.
//
// Regions from different threads are serialised by a mutex, so one pool can serve
// several sessions at once. A task must not start another region (no nesting).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace inlay {

class ThreadPool {
public:
    // n_threads <= 0 means std::thread::hardware_concurrency().
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    [[nodiscard]] int size() const { return n_threads_; }

    // Calls fn(thread_index, n_threads) once on each of the pool's threads and
    // returns when all have finished. An exception thrown by fn is rethrown here.
    template <class Fn>
    void run(Fn&& fn) {
        run_impl(
            [](void* ctx, int ith, int nth) { (*static_cast<std::remove_reference_t<Fn>*>(ctx))(ith, nth); },
            static_cast<void*>(&fn));
    }

    // Splits [0, n) into one contiguous range per thread and calls fn(begin, end) for
    // each non-empty range. `align` rounds range borders to a multiple (e.g. so that
    // threads never share a cache line of output).
    template <class Fn>
    void parallel_for(size_t n, Fn&& fn, size_t align = 1) {
        if (n == 0) return;
        if (n_threads_ == 1 || n <= align) {
            fn(size_t{0}, n);
            return;
        }
        run([&](int ith, int nth) {
            const size_t chunks = (n + align - 1) / align;
            const size_t begin = std::min(n, chunks * static_cast<size_t>(ith) / static_cast<size_t>(nth) * align);
            const size_t end = std::min(n, chunks * static_cast<size_t>(ith + 1) / static_cast<size_t>(nth) * align);
            if (begin < end) fn(begin, end);
        });
    }

private:
    using TaskFn = void (*)(void* ctx, int ith, int nth);

    void run_impl(TaskFn fn, void* ctx);
    void worker_loop(int ith);
    void run_task(int ith) noexcept;

    int n_threads_;
    std::vector<std::thread> workers_;
    std::mutex region_mutex_;  // one region at a time

    TaskFn task_ = nullptr;
    void* task_ctx_ = nullptr;
    std::atomic<uint32_t> generation_{0};
    std::atomic<uint32_t> pending_{0};
    std::atomic<bool> stop_{false};
    std::mutex error_mutex_;
    std::exception_ptr error_;
};

}  // namespace inlay
