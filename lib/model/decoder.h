// Decoder<B>: the forward pass of a Llama-family decoder, written once for every
// backend and every family (differences come from DecoderSpec).
//
// One call processes a ragged batch: any number of tokens from one or more sequences
// (a whole prompt chunk, or one decode token per sequence), writes their K/V into the
// paged cache and returns logits for the rows asked for.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "backend/concepts.h"
#include "io/weight_source.h"
#include "model/decoder_spec.h"

namespace inlay {

// Progress of a load in [0, 1]; return false to abort (INLAY_ERR_CANCELLED).
using ProgressFn = std::function<bool(float)>;

template <Backend B>
class Decoder {
public:
    using Weight = typename B::Weight;
    using Buffer = typename B::Buffer;

    struct Layer {
        Weight attn_norm, wq, wk, wv, wo;
        Weight ffn_norm, w_gate, w_up, w_down;
        std::optional<Weight> q_norm, k_norm;  // qk_norm families
    };

    // Scratch activations for batches of up to `capacity` tokens, the uploaded batch and
    // the ops' scratch. One per caller thread (sessions own theirs); reused across calls,
    // so a forward pass allocates nothing once its workspace exists.
    struct Workspace {
        int64_t capacity = 0;
        int64_t logit_capacity = 0;
        Buffer x, y, xn, q, k, v, attn, ffn, rows, logits;  // x: the residual stream; y: a block's output
        typename B::Batch batch;
        typename B::Scratch scratch;
        // Logit rows of the latest ids in the scratch (the step before's, which a batch's
        // fed tokens may take); 0 after a step that chose no ids.
        int64_t latest_id_rows = 0;
        int unread_ids = 0;  // launched passes whose ids were not read yet
    };

    // Validates every tensor's presence, type and shape against `spec` (errors name the
    // tensor, expected and actual shape) and prepares the weights on the backend.
    // `spec.n_vocab` must be set. The source must outlive the decoder.
    Decoder(B& backend, const DecoderSpec& spec, const WeightSource& source);

    [[nodiscard]] const DecoderSpec& spec() const { return spec_; }
    [[nodiscard]] B& backend() const { return backend_; }
    [[nodiscard]] KvGeometry kv_geometry(int64_t block_size, DType dtype) const;

    [[nodiscard]] Workspace make_workspace(int64_t max_tokens, int64_t max_logit_rows) const;

    // Runs the batch's tokens through the model, storing their K/V in `kv`, and writes
    // the logits of its logit rows to logits_out (host; n_logit_rows * n_vocab floats)
    // when it is not null, and to ids_out (n_logit_rows ids) when that is not null: each
    // logit row's argmax (Backend::argmax_rows), or with `sampling` the token drawn from it
    // (Backend::sample_rows).
    // The batch is validated once here (validate_batch): token ids (INLAY_ERR_INVALID_TOKEN),
    // block ids, positions and sizes (INLAY_ERR_INTERNAL).
    void forward(const BatchDesc& batch, typename B::KvStorage& kv, Workspace& ws, float* logits_out,
                 int32_t* ids_out = nullptr, const SampleRows* sampling = nullptr) const;
    // The same pass choosing ids (argmax, or drawn with `sampling`), queued without
    // waiting: its ids stay in the workspace until read_ids. A batch's fed tokens take the
    // ids of the pass run just before on `ws`. Up to kMaxUnreadIds passes may be unread,
    // and forward() refuses a workspace with unread ones (it would read theirs).
    void launch(const BatchDesc& batch, typename B::KvStorage& kv, Workspace& ws,
                const SampleRows* sampling = nullptr) const;
    // Waits for the oldest unread pass of `ws` and writes its n_rows ids.
    void read_ids(Workspace& ws, int64_t n_rows, int32_t* ids) const;

private:
    // The pass up to its outputs: the logits stay in ws.logits, or with want_ids each row's
    // id is chosen (not read).
    void run(const BatchDesc& batch, typename B::KvStorage& kv, Workspace& ws, bool want_ids,
             const SampleRows* sampling) const;

    B& backend_;
    DecoderSpec spec_;
    Weight token_embd_, output_norm_, output_;
    std::vector<Layer> layers_;
    std::optional<Weight> rope_freq_factors_;  // llama3 scaling (n_rot / 2 divisors)
};

}  // namespace inlay
