// Session files: a conversation's tokens and KV cache, saved and restored.
//
// Format version 1 (little-endian), 128-byte header then the payload:
//   0  char[8] magic "INLAYSES"       8 u32 version (1)         12 u32 header bytes (128)
//  16  u64 model hash                24 u64 vocabulary hash    32 u64 weights hash
//  40  u32 n_layers  44 u32 n_kv_heads  48 u32 head_dim  52 u32 block_size
//  56  u32 KV dtype (ggml id)        60 u32 n_vocab
//  64  u64 block bytes               72 u64 n_tokens           80 u64 n_cached
//  88  u64 n_blocks (= ceil(n_cached / block_size))            96 u64 payload checksum
// 104  char[16] architecture (NUL-padded)                     120 u64 header checksum of [0, 120)
// 128  i32 tokens[n_tokens], then n_blocks KV blocks of block-bytes each in the canonical
//      layout [layer][k|v][kv_head][slot][head_dim] (slots past n_cached are zero).
//
// The model fingerprint (model hash: architecture and every dimension and RoPE/norm
// setting; vocabulary hash: every token's text and the special ids; weights hash: each
// tensor's name, type, shape and first/last bytes) and the KV geometry must match the
// restoring model exactly. Reading validates everything before anything is used:
// wrong magic or checksums -> INLAY_ERR_BAD_FORMAT, a short file -> INLAY_ERR_TRUNCATED,
// another version -> INLAY_ERR_UNSUPPORTED, another model or geometry ->
// INLAY_ERR_SHAPE_MISMATCH naming what differs, unreadable -> INLAY_ERR_IO.
#pragma once

#include <cstdint>
#include <string>

#include "model/model.h"
#include "runtime/engine.h"

namespace inlay {

struct ModelFingerprint {
    std::string architecture;
    uint64_t model_hash = 0;
    uint64_t vocab_hash = 0;
    uint64_t weights_hash = 0;
};

ModelFingerprint model_fingerprint(const Model& model);

// Writes `image` (from Engine::snapshot on a store of `store`'s geometry) to path.
void write_session_file(const std::string& path, const Model& model, const KvStore& store, const SequenceImage& image);
// Reads and validates a file written for this model and store geometry.
SequenceImage read_session_file(const std::string& path, const Model& model, const KvStore& store);

// 64-bit checksum of bytes (not cryptographic: it detects corruption, not tampering).
uint64_t checksum64(std::span<const std::byte> bytes, uint64_t seed);

}  // namespace inlay
