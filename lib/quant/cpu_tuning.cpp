#include "quant/cpu_tuning.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace inlay::quant {
namespace {

enum class Profile { amd, zen5, intel };

// The profile CPUID names: the vendor string of leaf 0, and for AMD the family of leaf 1
// (base family 0Fh plus the extended family: 19h is Zen 3 and 4, 1Ah Zen 5).
Profile detected_profile() {
#if defined(__x86_64__) || defined(__i386__)
    unsigned max_leaf = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(0, &max_leaf, &ebx, &ecx, &edx) == 0) return Profile::amd;
    char vendor[13] = {};
    std::memcpy(vendor, &ebx, 4);
    std::memcpy(vendor + 4, &edx, 4);
    std::memcpy(vendor + 8, &ecx, 4);
    if (std::strcmp(vendor, "GenuineIntel") == 0) return Profile::intel;
    unsigned eax = 0;
    if (std::strcmp(vendor, "AuthenticAMD") == 0 && max_leaf >= 1 && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0) {
        const unsigned base = (eax >> 8) & 0xf, extended = (eax >> 20) & 0xff;
        const unsigned family = base == 0xf ? base + extended : base;
        if (family >= 0x1a) return Profile::zen5;
    }
#endif
    return Profile::amd;
}

CpuTuning choose() {
    Profile profile = detected_profile();
    if (const char* name = std::getenv("INLAY_CPU_TUNING"); name && *name) {
        if (std::strcmp(name, "intel") == 0) profile = Profile::intel;
        if (std::strcmp(name, "amd") == 0) profile = Profile::amd;
        if (std::strcmp(name, "zen5") == 0) profile = Profile::zen5;
    }
    CpuTuning t;
    // L2 on Intel only: Zen 4 and Zen 5 measured L1 prefetches faster.
    t.block_prefetch_to_l2 = profile == Profile::intel;
    // Eights on Intel and Zen 5 (one thread, bench_kernels vec_dot_rows q8_0 against pairs,
    // 2026-12-06: 35 -> 45-50 GB/s in cache, 31-33 -> 38-44 from DRAM; decode with 2
    // threads: SmolLM2-135M shape +3-27%, Qwen3-0.6B shape -3% to +4% as the host's
    // bandwidth moved); pairs on Zen 4, where eights lost from DRAM.
    t.q8_0_rows_in_eights = profile == Profile::intel || profile == Profile::zen5;
    return t;
}

}  // namespace

const CpuTuning& cpu_tuning() noexcept {
    static const CpuTuning tuning = choose();
    return tuning;
}

namespace simd {
// Read by the kernels at every prefetch, so a plain constant rather than cpu_tuning()'s
// guarded static (a kernel run during static initialisation, before this is set, would
// see false and prefetch into L1).
extern const bool kBlockPrefetchToL2;
const bool kBlockPrefetchToL2 = cpu_tuning().block_prefetch_to_l2;
}  // namespace simd

}  // namespace inlay::quant
