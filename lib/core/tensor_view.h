// TensorView: a read-only, non-owning view of one weight tensor as stored in a file
// (usually a memory mapping). Dimension order is ggml's: ne[0] is the innermost,
// contiguous dimension, so a linear layer y = W x with x of n_in and y of n_out has
// ne = {n_in, n_out}: n_out rows of n_in elements each.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace inlay {

struct TensorView {
    std::string name;
    DType type = DType::F32;
    int n_dims = 0;                         // 1..4
    std::array<int64_t, 4> ne{1, 1, 1, 1};  // elements per dimension, ne[0] innermost
    const std::byte* data = nullptr;        // first byte; owned by the WeightSource
    size_t nbytes = 0;                      // bytes of data
    // data lies in a read-only private mapping of a file: its pages may be dropped (a
    // backend that repacked them) and are read again from the file when touched.
    bool file_backed = false;

    [[nodiscard]] int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    // A matrix view: rows of ne[0] elements; higher dimensions fold into rows.
    [[nodiscard]] int64_t row_length() const { return ne[0]; }
    [[nodiscard]] int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
    [[nodiscard]] size_t row_stride() const { return n_rows() ? nbytes / static_cast<size_t>(n_rows()) : 0; }
};

}  // namespace inlay
