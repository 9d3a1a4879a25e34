// Q8_0 / Q4_0 / Q5_0 / Q1_0 (and Q4_K / Q5_K / Q6_K, below) weight matrices repacked at load time with sixteen rows interleaved,
// for CPUs with AVX-512 VNNI (and no AMX, whose prompt tiles read the stored rows).
//
// In the stored layout each row is a run of 34-, 18- or 22-byte blocks, and a kernel that
// multiplies eight rows at once ends every block with eight vectors of lane sums to
// reduce (dot_block_sums_zmm8: about half its operations). Here a 32-element block of
// sixteen rows is one record in which 32-bit lane r of a vector holds row r's bytes, so
// dpbusd against an activation quad broadcast to every lane adds four products to each
// row's own lane: eight of them make the sixteen rows' block totals, with nothing to
// reduce. A group of sixteen rows is one contiguous stream, and each further token costs
// only its eight dpbusd per record (the stored layout pays the reduction again for every
// token). Record of block b of a group (Q8_0: 544 bytes, Q4_0: 288, Q5_0: 352, the bytes
// of the sixteen stored blocks):
//   d[16]            f16 scales of rows 0..15
//   quads[8][16]     Q8_0: quads[k][r]: row r's values 4k..4k+3, each + 128 (unsigned, as
//                    dpbusd takes them)
//   quads[4][16]     Q4_0 / Q5_0: quads[k][r]: bytes 4k..4k+3 of row r's qs (low nibbles:
//                    elements 4k..4k+3, high nibbles: elements 16+4k..16+4k+3)
//   high[8] (Q5_0)   64-bit masks: bit 4r+j of high[k] is the fifth bit of row r's element
//                    4k+j (k < 4) or 16+4(k-4)+j (k >= 4), the byte it lands in
// Every (row, token) is fused per block as dot_block_sums fuses it (fma(float(total),
// d_w * d_x, acc), in block order), so the results are the stored rows' bits.
//
// Q1_0 (one record per block of 128, 288 bytes): d[16], then masks[32], 64-bit: bit 4r + j
// of masks[k] is row r's sign bit of element 4k + j. One masked move of the bytes 2 turns
// a mask into the levels (0 or 2) of four elements of sixteen rows, and eight dpbusd from
// a -sum(x) start give a sub-block's sign-bit dots, with nothing to reduce (the stored
// rows' kernel sums eight rows' lanes per sub-block: about half its operations). The
// floats are fused as dot_q1_0 fuses them: the same bits.
//
// The K-quants the same way, one record per super-block of 256 and group of sixteen rows
// (Q4_K 2304 bytes, Q5_K 2816, Q6_K 3360: again the sixteen stored blocks' bytes):
//   Q4_K / Q5_K  d[16], dmin[16]; scales[12][16]: byte j of row r's packed scales at 16j +
//                r (so the stored 6-bit unpacking runs on sixteen rows at once);
//                quads[4][8][16]: bytes 32c + 4k..32c + 4k + 3 of row r's qs (low nibbles:
//                elements 64c + 4k.., high: 64c + 32 + 4k..); Q5_K: high[8][16], bytes
//                4k..4k + 3 of row r's qh
//   Q6_K         d[16]; scales[16][16]; ql[2][16][16] and qh[2][8][16], bytes 4k..4k + 3 of
//                each half's ql and qh
// Eight dpbusd give a 32-element sub-block's dots of sixteen rows (four for Q6_K's 16),
// times the rows' scales (vpmulld) the super-block's exact totals, fused as the stored
// rows' kernels fuse them (interleaved_kquants.cpp): the same bits again.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "quant/vec_dot.h"

namespace inlay::quant {

// Whether this build and CPU multiply `weight` matrices of n columns and n_rows rows in
// the interleaved layout (Q8_0 / Q4_0 / Q5_0 / Q1_0 / Q4_K / Q5_K / Q6_K, n_rows a multiple of
// 16, AVX-512 VNNI, no AMX).
bool interleaved_rows_supported(DType weight, int64_t n, int64_t n_rows);
// Bytes of one group of sixteen rows, and of a whole matrix.
size_t interleaved_group_bytes(DType weight, int64_t n);
size_t interleaved_bytes(DType weight, int64_t n, int64_t n_rows);
// Writes interleaved_bytes(weight, n, n_rows) bytes to `out` from the stored rows (w_stride
// bytes apart). Throws INLAY_ERR_INVALID_ARGUMENT where interleaved_rows_supported is false.
void interleave_rows(DType weight, int64_t n, int64_t n_rows, const void* w, size_t w_stride, void* out);
// Writes row r of the matrix (stored-row bytes, as interleave_rows read them) from the
// records of interleave_rows' output w16: embedding lookups in a table kept only
// interleaved.
void interleaved_stored_row(DType weight, int64_t n, const void* w16, int64_t r, void* out);
// result[t * result_stride + r] = dot(row r, x + t * x_stride bytes) for r < n_rows (a
// multiple of 16) and t < n_tokens; w16 points at the first group's record 0 (a group
// boundary of interleave_rows' output); activations in Q8_0. Bitwise equal to
// vec_dot_kernel(weight) on the stored rows. Up to kStreamedTokens tokens pass over the
// records eight at a time; more (a prompt) take the sixteen-row tiles, whose activations
// `pack` holds as vec_dot_tile's (TilePack(weight, n, n_tokens, x, x_stride); built here
// when null). Throws INLAY_ERR_INVALID_ARGUMENT for bad arguments, a pack made for other
// activations, or where the layout is not supported.
void vec_dot_interleaved(DType weight, int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                         const void* w16, const void* x, size_t x_stride, const TilePack* pack = nullptr);

namespace detail {
// The records against any number of tokens, eight at a time (no argument checks).
void interleaved_tiles(DType weight, int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                       const void* w16, const void* x, size_t x_stride);
// The K-quants' parts (interleaved_kquants.cpp), unchecked: one group's records from its
// sixteen stored rows; lane `lane`'s stored row from a group's records; the records
// against tokens in Q8_K, eight at a time.
void interleave_kquant_group(DType weight, const uint8_t* w, size_t w_stride, int64_t n_blocks, uint8_t* out);
void kquant_stored_row(DType weight, int64_t n_blocks, const uint8_t* group, int lane, uint8_t* out);
void kquant_interleaved_tiles(DType weight, int64_t n, int64_t n_rows, int64_t n_tokens, float* result,
                              size_t result_stride, const void* w16, const void* x, size_t x_stride);
}  // namespace detail

}  // namespace inlay::quant
