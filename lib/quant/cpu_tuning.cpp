#include "quant/cpu_tuning.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace inlay::quant {
namespace {

bool vendor_is_intel() {
#if defined(__x86_64__) || defined(__i386__)
    unsigned max_leaf = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(0, &max_leaf, &ebx, &ecx, &edx) == 0) return false;
    char vendor[13] = {};
    std::memcpy(vendor, &ebx, 4);
    std::memcpy(vendor + 4, &edx, 4);
    std::memcpy(vendor + 8, &ecx, 4);
    return std::strcmp(vendor, "GenuineIntel") == 0;
#else
    return false;
#endif
}

CpuTuning choose() {
    bool intel = vendor_is_intel();
    if (const char* name = std::getenv("INLAY_CPU_TUNING"); name && *name) {
        if (std::strcmp(name, "intel") == 0) intel = true;
        if (std::strcmp(name, "amd") == 0) intel = false;
    }
    CpuTuning t;
    t.block_prefetch_to_l2 = intel;
    t.q8_0_rows_in_eights = intel;
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
