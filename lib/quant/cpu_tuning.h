// Internal: the choices of the CPU kernels that measured differently on Intel and AMD
// cores, made once per process from the CPU's vendor. INLAY_CPU_TUNING=intel or amd
// picks one whatever the CPU (measurements, tests of both paths, troubleshooting).
#pragma once

namespace inlay::quant {

struct CpuTuning {
    // The block formats' prefetches fill L2 instead of L1 (simd_avx2.h, prefetch_rows).
    bool block_prefetch_to_l2 = false;
    // Q8_0 decode rows in groups of eight instead of pairs (vec_dot_avx2.cpp).
    bool q8_0_rows_in_eights = false;
};

// The tuning of this process: Intel's for GenuineIntel CPUs, AMD's (the default) for
// every other.
[[nodiscard]] const CpuTuning& cpu_tuning() noexcept;

}  // namespace inlay::quant
