// Internal: the choices of the CPU kernels that measured differently on Intel and AMD
// cores, made once per process from the CPU's vendor and family. INLAY_CPU_TUNING=intel,
// amd or zen5 picks one profile whatever the CPU (measurements, tests of every path,
// troubleshooting).
#pragma once

namespace inlay::quant {

struct CpuTuning {
    // The block formats' prefetches fill L2 instead of L1 (simd_avx2.h, prefetch_rows).
    bool block_prefetch_to_l2 = false;
    // Q8_0 decode rows in groups of eight instead of pairs (vec_dot_avx2.cpp).
    bool q8_0_rows_in_eights = false;
};

// The tuning of this process: Intel's for GenuineIntel CPUs, Zen 5's for AMD CPUs of
// family 1Ah and later, AMD's (Zen 4 and earlier; the default) for every other.
[[nodiscard]] const CpuTuning& cpu_tuning() noexcept;

}  // namespace inlay::quant
