// CpuBackend: construction, memory and weights. The ops live in cpu_ops.cpp,
// cpu_matmul.cpp and cpu_attention.cpp.
#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <string_view>

#include <sys/mman.h>
#include <unistd.h>

#include "backend/common/op_checks.h"
#include "core/error.h"
#include "core/half.h"
#include "quant/interleaved_rows.h"
#include "quant/quantize.h"
#include "quant/vec_dot.h"

namespace inlay {

CpuBackend::CpuBackend(int n_threads) : pool_(n_threads) {}

DeviceMemory CpuBackend::memory_info() const {
    DeviceMemory m;
    // MemAvailable counts reclaimable page cache, which a KV pool can use; sysconf's
    // free pages do not.
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    size_t kib = 0;
    std::string unit;
    while (meminfo >> key >> kib >> unit) {
        if (key == "MemTotal:") m.total_bytes = kib * 1024;
        if (key == "MemAvailable:") m.free_bytes = kib * 1024;
    }
    const long page = sysconf(_SC_PAGESIZE);
    if (m.total_bytes == 0 && page > 0)
        m.total_bytes = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(page);
    if (m.free_bytes == 0 && page > 0)
        m.free_bytes = static_cast<size_t>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<size_t>(page);
    return m;
}

CpuBackend::Buffer CpuBackend::alloc(int64_t n_floats) {
    if (n_floats < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "CpuBackend::alloc: negative size {}", n_floats);
    return Buffer{ZeroedArray<float>(static_cast<size_t>(n_floats))};
}

CpuBackend::Weight CpuBackend::upload_matrix(const TensorView& view) {
    const size_t stride = require_matrix_layout(view);
    (void)quant::vec_dot_type(view.type);  // throws INLAY_ERR_UNSUPPORTED for types without kernels
    Weight w;
    w.type = view.type;
    w.n_cols = view.row_length();
    w.n_rows = view.n_rows();
    w.row_stride = stride;
    w.data = view.data;
    interleave_rows(w, view.file_backed);
    w.next_reads = std::make_shared<NextReads>();
    return w;
}

namespace {
// INLAY_INTERLEAVE=0 keeps the stored rows (to compare the layouts).
bool interleaving_enabled() {
    const char* v = std::getenv("INLAY_INTERLEAVE");
    return v == nullptr || std::string_view(v) != "0";
}

// Unmaps the whole pages inside [p, p + bytes), which lie in a read-only private file
// mapping (TensorView::file_backed): they leave the process's resident set, and a later
// read (an embedding lookup) faults them in again from the file. (MADV_PAGEOUT would keep
// the mapping but skips the 2 MiB folios that MappedFile asks for when a tensor shares
// one with its neighbours.)
void release_file_pages(const std::byte* p, size_t bytes) {
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
    const auto end = (reinterpret_cast<uintptr_t>(p) + bytes) / page * page;
    if (end <= begin) return;
    // First out of the huge-page advice MappedFile gave the file: else reading a
    // neighbouring tensor maps its whole 2 MiB folio again, these pages included.
    (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_NOHUGEPAGE);
    (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}
}  // namespace

void CpuBackend::interleave_rows(Weight& w, bool file_backed) {
    if (!interleaving_enabled() || !quant::interleaved_rows_supported(w.type, w.n_cols, w.n_rows)) return;
    const size_t bytes = quant::interleaved_bytes(w.type, w.n_cols, w.n_rows);
    std::shared_ptr<std::byte[]> storage = std::make_shared_for_overwrite<std::byte[]>(bytes);  // every byte written below
    const size_t group_bytes = quant::interleaved_group_bytes(w.type, w.n_cols);
    const size_t n_groups = static_cast<size_t>(w.n_rows / 16);
    // A slice of about 2 MiB at a time, whose stored pages are then dropped where the file
    // can give them back: the layout costs no resident memory beyond the stored rows', and
    // the load's peak holds one slice twice, not a whole matrix (a tied embedding of 20 MB+).
    const size_t slice = std::max<size_t>(1, (size_t{2} << 20) / group_bytes);
    for (size_t g0 = 0; g0 < n_groups; g0 += slice) {
        const size_t g1 = std::min(n_groups, g0 + slice);
        pool_.parallel_for(g1 - g0, [&](size_t b, size_t e) {
            quant::interleave_rows(w.type, w.n_cols, static_cast<int64_t>(e - b) * 16,
                                   w.row(static_cast<int64_t>((g0 + b) * 16)), w.row_stride,
                                   storage.get() + (g0 + b) * group_bytes);
        });
        if (file_backed) release_file_pages(w.row(static_cast<int64_t>(g0 * 16)), (g1 - g0) * 16 * w.row_stride);
    }
    if (file_backed) release_file_pages(w.data, static_cast<size_t>(w.n_rows) * w.row_stride);  // the slices' seams
    w.interleaved = storage.get();
    w.interleaved_storage = std::move(storage);
}

CpuBackend::Weight CpuBackend::upload_vector(const TensorView& view) {
    Weight w = upload_matrix(view);
    w.next_reads.reset();  // never a product
    if (w.type == DType::F32) return w;
    // Norm weights are tiny: keep an f32 copy so the norm ops need only one path.
    const int64_t n = w.n_cols * w.n_rows;
    auto owned = std::make_shared<std::vector<float>>(static_cast<size_t>(n));
    quant::dequantize_row(w.type, w.data, owned->data(), n);
    w.type = DType::F32;
    w.row_stride = static_cast<size_t>(w.n_cols) * sizeof(float);
    w.data = reinterpret_cast<const std::byte*>(owned->data());
    w.owned = std::move(owned);
    return w;
}

void CpuBackend::write(Buffer& dst, int64_t offset, const float* host_src, int64_t count) {
    if (offset < 0 || count < 0 || static_cast<size_t>(offset + count) > dst.size())
        fail(INLAY_ERR_INTERNAL, "CpuBackend::write: range [{}, {}) outside buffer of {}", offset, offset + count,
             dst.size());
    if (count > 0) std::memcpy(dst.ptr() + offset, host_src, static_cast<size_t>(count) * sizeof(float));
}

void CpuBackend::read(const Buffer& src, int64_t offset, int64_t count, float* host_dst) {
    if (offset < 0 || count < 0 || static_cast<size_t>(offset + count) > src.size())
        fail(INLAY_ERR_INTERNAL, "CpuBackend::read: range [{}, {}) outside buffer of {}", offset, offset + count,
             src.size());
    if (count > 0) std::memcpy(host_dst, src.ptr() + offset, static_cast<size_t>(count) * sizeof(float));
}

CpuBackend::Scratch CpuBackend::alloc_scratch(const ScratchShape& shape) {
    if (shape.max_tokens < 0 || shape.max_in < 0 || shape.n_ff < 0 || shape.n_heads < 0 || shape.head_dim < 0)
        fail(INLAY_ERR_INVALID_ARGUMENT, "CpuBackend::alloc_scratch: negative size");
    Scratch s;
    // The widest partner-format row: every activation type is at most 2 bytes per
    // element plus its block headers (f16/bf16: exactly 2; Q8_0/Q8_1/Q8_K: under 1.2).
    size_t row = 0;
    const int64_t padded = (shape.max_in + 255) / 256 * 256;
    for (DType t : {DType::F16, DType::BF16, DType::Q8_0, DType::Q8_1, DType::Q8_K})
        if (const auto r = row_bytes(t, padded)) row = std::max(row, *r);
    s.converted = ZeroedArray<std::byte>(row * static_cast<size_t>(shape.max_tokens));
    s.up = alloc(shape.max_tokens * shape.n_ff);
    for (auto& ids : s.ids) ids.resize(static_cast<size_t>(std::max<int64_t>(shape.max_tokens, 1)));
    if (shape.head_dim > 0 && shape.n_heads > 0) {
        s.attn_slots = kAttnSlotsPerThread * pool_.size();
        s.attn_head_dim = shape.head_dim;
        s.attn.resize(static_cast<size_t>(s.attn_slots * attention_slot_floats(shape.head_dim)));
        s.attn_tiles.resize(static_cast<size_t>(shape.max_tokens) + 1);
    }
    return s;
}

void CpuBackend::prepare_batch(const BatchDesc& desc, const BatchLimits& limits, Batch& batch) {
    validate_batch(desc, limits);
    auto copy = [](std::span<const int32_t> from, std::vector<int32_t>& to) { to.assign(from.begin(), from.end()); };
    copy(desc.tokens, batch.tokens);
    copy(desc.positions, batch.positions);
    copy(desc.seq_of_token, batch.seq_of_token);
    copy(desc.kv_indptr, batch.kv_indptr);
    copy(desc.kv_indices, batch.kv_indices);
    copy(desc.logit_rows, batch.logit_rows);
    copy(desc.fed_rows, batch.fed_rows);
    batch.block_size = limits.block_size;
    batch.n_blocks = limits.n_blocks;
    batch.rope_angles.n_rot = -1;  // new positions: rope() makes the angles again
    const auto n = static_cast<size_t>(desc.n_tokens());
    batch.slot_block.resize(n);
    batch.slot_index.resize(n);
    for (size_t t = 0; t < n; ++t) {
        const int32_t pos = desc.positions[t];
        batch.slot_block[t] = batch.block_table(desc.seq_of_token[t])[pos / limits.block_size];
        batch.slot_index[t] = static_cast<int32_t>(pos % limits.block_size);
    }
}

// --- KV storage ---------------------------------------------------------------------

CpuBackend::KvStorage::KvStorage(const KvGeometry& geometry) : geometry_(geometry) {
    block_bytes_ = kv_canonical_block_bytes(geometry);  // validates the geometry
    const size_t elem = geometry.dtype == DType::F16 ? 2 : 4;
    slab_bytes_ = static_cast<size_t>(geometry.block_size * geometry.head_dim) * elem;
    n_slabs_ = geometry.n_layers * 2 * geometry.n_kv_heads;
}

void CpuBackend::KvStorage::resize(int64_t n_blocks) {
    if (n_blocks < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "negative KV block count");
    const auto n_segments = static_cast<size_t>((n_blocks + kSegmentBlocks - 1) / kSegmentBlocks);
    if (n_blocks < n_blocks_) {
        segments_.resize(n_segments);
        // Blocks dropped from the last segment are zeroed: a block added again reads 0.
        const int64_t kept = n_blocks % kSegmentBlocks, dropped = std::min(n_blocks_ - n_blocks, kSegmentBlocks - kept);
        if (kept != 0)
            for (int64_t i = 0; i < n_slabs_; ++i) std::memset(slab(n_blocks, i), 0, static_cast<size_t>(dropped) * slab_bytes_);
    }
    segments_.reserve(n_segments);
    while (segments_.size() < n_segments) {
        const size_t bytes = static_cast<size_t>(kSegmentBlocks) * block_bytes_;
        try {
            segments_.push_back(Segment{ZeroedArray<std::byte>(bytes)});
        } catch (const Error&) {
            fail(INLAY_ERR_OUT_OF_MEMORY, "out of memory for KV blocks {}-{} of {} ({} bytes each)",
                 static_cast<int64_t>(segments_.size()) * kSegmentBlocks,
                 static_cast<int64_t>(segments_.size() + 1) * kSegmentBlocks - 1, n_blocks, block_bytes_);
        }
    }
    n_blocks_ = n_blocks;
}

CpuBackend::KvStorage CpuBackend::alloc_kv(const KvGeometry& geometry, int64_t n_blocks) {
    KvStorage kv(geometry);
    kv.resize(n_blocks);
    return kv;
}

void CpuBackend::resize_kv(KvStorage& kv, int64_t n_blocks) { kv.resize(n_blocks); }

}  // namespace inlay
