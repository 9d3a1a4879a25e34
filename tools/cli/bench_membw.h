// `inlay bench --membw`: the machine's memory read bandwidth with a given number of
// threads, the roofline that decode (which streams every weight once per token) is held
// against.
#pragma once

#include <cstddef>
#include <cstdint>

namespace inlay::cli {

struct MembwOptions {
    int n_threads = 1;
    size_t buffer_bytes = size_t{1} << 30;  // far beyond any last-level cache
    int passes = 5;
};

// Best bytes per second of `passes` streaming reads of the whole buffer, each thread
// summing its own contiguous slice. The buffer is written first (by the thread that later
// reads each slice), so no pass pays for page faults.
double measure_read_bandwidth(const MembwOptions& options);

}  // namespace inlay::cli
