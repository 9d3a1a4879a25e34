// Device helpers shared by the kernels: f16/bf16 conversion, read-only loads, warp sums.
//
// This file is compiled both by nvcc (through the .cu files) and by NVRTC at load time
// (it is embedded with paged_attention.cuh, see nvrtc_sources.h), so it includes nothing
// and uses only what NVRTC provides without headers: builtin types, intrinsics, PTX.
#pragma once

namespace inlay {
namespace cuda {
namespace dev {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float f16_to_f32(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

// Round to nearest even.
__device__ __forceinline__ unsigned short f32_to_f16(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

__device__ __forceinline__ float bf16_to_f32(unsigned short h) {
    return __uint_as_float(static_cast<unsigned>(h) << 16);
}

__device__ __forceinline__ float neg_inf() {
    return __int_as_float(static_cast<int>(0xff800000u));
}

// Read-only (non-coherent) loads of naturally aligned data.
__device__ __forceinline__ unsigned short ld_u16(const void* p) {
    return __ldg(static_cast<const unsigned short*>(p));
}
__device__ __forceinline__ unsigned ld_u32(const void* p) {
    return __ldg(static_cast<const unsigned*>(p));
}
__device__ __forceinline__ uint2 ld_u64(const void* p) {
    return __ldg(static_cast<const uint2*>(p));
}
__device__ __forceinline__ uint4 ld_u128(const void* p) {
    return __ldg(static_cast<const uint4*>(p));
}

// A 32-bit little-endian word from a 2-byte aligned address (two 16-bit loads).
__device__ __forceinline__ unsigned ld_u32_a2(const unsigned char* p) {
    return static_cast<unsigned>(ld_u16(p)) | (static_cast<unsigned>(ld_u16(p + 2)) << 16);
}

// Byte i (0..3) of a word.
__device__ __forceinline__ unsigned byte_of(unsigned w, int i) {
    return (w >> (8 * i)) & 0xffu;
}

// Sum over the 32 lanes of a warp; every lane gets the total. The order is a fixed
// xor-butterfly (offsets 16, 8, 4, 2, 1), so every lane computes the same bits.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) v += __shfl_xor_sync(kFullMask, v, off);
    return v;
}

}  // namespace dev
}  // namespace cuda
}  // namespace inlay
