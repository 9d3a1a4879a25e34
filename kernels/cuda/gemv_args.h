// The argument block of gemv_kernel (plain types: filled by gemv.cpp, read by gemv.cuh).
#pragma once

namespace inlay {
namespace cuda {
namespace dev {

struct GemvArgs {
    const unsigned char* w;  // n_rows rows, row_stride bytes apart
    long long n_rows;
    long long n_cols;
    long long row_stride;  // bytes
    const float* x;        // [n_tokens][x_stride], 16-byte aligned rows
    long long x_stride;
    int n_tokens;  // 1..NT of the kernel
    float* y;      // [n_tokens][y_stride]
    long long y_stride;
    bool wide;  // w and row_stride 16-byte aligned (formats with kCanWide)
};

}  // namespace dev
}  // namespace cuda
}  // namespace inlay
