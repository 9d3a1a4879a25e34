#include "bench_membw.h"
#include "read_lanes.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace inlay::cli {

double measure_read_bandwidth(const MembwOptions& o) {
    const size_t n_threads = static_cast<size_t>(std::max(o.n_threads, 1));
    const size_t lanes_per_thread = std::max<size_t>(o.buffer_bytes / kLaneBytes / n_threads, 4);
    const size_t n_lanes = lanes_per_thread * n_threads;
    // operator new of an over-aligned type: 64-byte aligned, no constructor run.
    const std::unique_ptr<Lane[]> buffer(new Lane[n_lanes]);
    const int passes = std::max(o.passes, 1);

    using Clock = std::chrono::steady_clock;
    std::vector<uint64_t> sinks(n_threads);
    Clock::time_point start;
    std::vector<double> pass_seconds;
    // Each phase (the first touch, then every pass) starts and ends at the barrier; the
    // completion step, run by one thread between phases, reads the clock.
    auto on_phase = [&]() noexcept {
        const auto now = Clock::now();
        if (start != Clock::time_point{}) pass_seconds.push_back(std::chrono::duration<double>(now - start).count());
        start = now;
    };
    std::barrier sync(static_cast<std::ptrdiff_t>(n_threads), on_phase);
    auto work = [&](size_t t) {
        Lane* slice = buffer.get() + t * lanes_per_thread;
        std::memset(static_cast<void*>(slice), static_cast<int>(t + 1), lanes_per_thread * kLaneBytes);
        sync.arrive_and_wait();  // the clock starts here
        uint64_t sink = 0;
        for (int p = 0; p < passes; ++p) {
            sink += sum_lanes(slice, lanes_per_thread);
            sync.arrive_and_wait();
        }
        sinks[t] = sink;
    };
    std::vector<std::thread> threads;
    for (size_t t = 1; t < n_threads; ++t) threads.emplace_back(work, t);
    work(0);
    for (auto& th : threads) th.join();

    // The touch ends before the clock first starts: every recorded phase is a pass.
    double best = 0.0;
    for (const double s : pass_seconds)
        if (s > 0) best = std::max(best, static_cast<double>(n_lanes * kLaneBytes) / s);
    // A sum nobody reads could be dropped with its loads: publish it.
    volatile uint64_t keep = 0;
    for (uint64_t s : sinks) keep = keep + s;
    (void)keep;
    return best;
}

}  // namespace inlay::cli
