// C ABI: KV pools, per-model engines (caps, metrics), session fork and save/restore.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "capi/capi_common.h"
#include "capi/handles.h"

using inlay::capi::guarded;
using inlay::capi::require_arg;
using inlay::capi::require_params;

namespace inlay::capi {

std::shared_ptr<Engine> make_engine(std::shared_ptr<const Model> model, const inlay_model_params& p) {
    std::shared_ptr<KvBlockPool> pool;
    if (p.kv_pool) {
        pool = p.kv_pool->pools->pool_for(model->executor());
    } else {
        KvPoolOptions o = default_kv_pool_options(*model);
        if (p.kv_block_size > 0) {
            // Same number of tokens in blocks of the requested size. A budget in bytes (a
            // device's memory) stays the same bytes, whatever the block size.
            if (o.budget_blocks > 0) {
                const int64_t tokens = o.budget_blocks * o.block_size;
                o.budget_blocks = std::max<int64_t>(1, (tokens + p.kv_block_size - 1) / p.kv_block_size);
            }
            o.block_size = p.kv_block_size;
        }
        if (p.kv_budget_bytes > 0) {
            o.budget_blocks = 0;
            o.budget_bytes = p.kv_budget_bytes;
        } else if (p.kv_memory_fraction > 0.0) {
            o.budget_blocks = 0;
            o.budget_bytes = kv_pool_options_from_memory(*model, p.kv_memory_fraction).budget_bytes;
        }
        pool = make_kv_pool(model->executor(), o);
    }
    EngineOptions eo;
    if (p.batch_tokens > 0) eo.step_tokens = p.batch_tokens;
    return std::make_shared<Engine>(std::move(model), std::move(pool), eo);
}

}  // namespace inlay::capi

extern "C" {

INLAY_API void inlay_kv_pool_params_init_size(inlay_kv_pool_params* params, size_t size) {
    inlay::capi::init_sized(params, size, [](inlay_kv_pool_params& p) {
        p.budget_bytes = int64_t{256} << 20;
        p.block_size = 16;
    });
}

// Init without a size: the symbol that programs compiled before *_init_size existed
// call. It writes the struct as ABI 1 froze it (docs/ABI.md), never more.
INLAY_API void(inlay_kv_pool_params_init)(inlay_kv_pool_params* params) {
    inlay_kv_pool_params_init_size(params, sizeof(inlay_kv_pool_params));
}

INLAY_API inlay_status inlay_kv_pool_create(const inlay_kv_pool_params* params, inlay_kv_pool** out_pool) {
    if (out_pool) *out_pool = nullptr;
    return guarded("inlay_kv_pool_create", [&] {
        require_arg(out_pool != nullptr, "inlay_kv_pool_create", "out_pool is NULL");
        const inlay_kv_pool_params p =
            inlay::capi::read_params(params, "inlay_kv_pool_create", "inlay_kv_pool_params");
        require_arg(p.budget_bytes >= 0 && p.budget_blocks >= 0, "inlay_kv_pool_create",
                    "budget_bytes and budget_blocks must not be negative");
        require_arg(p.budget_bytes > 0 || p.budget_blocks > 0, "inlay_kv_pool_create",
                    "budget_bytes or budget_blocks must be positive");
        if (p.block_size < 1 || p.block_size > 4096)
            inlay::fail(INLAY_ERR_INVALID_ARGUMENT, "inlay_kv_pool_create: block_size is {}; it must be in [1, 4096]",
                        p.block_size);
        inlay::KvPoolOptions o;
        o.budget_bytes = p.budget_bytes;
        o.budget_blocks = p.budget_blocks;
        o.block_size = p.block_size;
        auto handle = std::make_unique<inlay_kv_pool>();
        handle->pools = std::make_shared<inlay::KvPoolSet>(o);
        *out_pool = handle.release();
    });
}

INLAY_API void inlay_kv_pool_free(inlay_kv_pool* pool) { delete pool; }

INLAY_API inlay_status inlay_model_set_kv_cap(inlay_model* model, int64_t max_blocks) {
    return guarded("inlay_model_set_kv_cap", [&] {
        require_arg(model != nullptr, "inlay_model_set_kv_cap", "model is NULL");
        require_arg(max_blocks >= 0, "inlay_model_set_kv_cap", "max_blocks must not be negative");
        model->engine->set_block_cap(max_blocks);
    });
}

INLAY_API inlay_status inlay_model_get_metrics(const inlay_model* model, inlay_metrics* metrics) {
    return guarded("inlay_model_get_metrics", [&] {
        require_arg(model != nullptr, "inlay_model_get_metrics", "model is NULL");
        require_arg(metrics != nullptr, "inlay_model_get_metrics", "metrics is NULL");
        require_params(metrics, "inlay_model_get_metrics", "inlay_metrics");
        const inlay::EngineMetrics m = model->engine->metrics();
        inlay_metrics out{};
        out.struct_size = metrics->struct_size;
        out.blocks_total = m.blocks.total;
        out.blocks_free = m.blocks.free + m.blocks.cached;
        out.blocks_cached = m.blocks.cached;
        out.blocks_shared = m.blocks.shared;
        out.blocks_held = m.blocks_held;
        out.block_cap = m.block_cap;
        out.block_size = static_cast<int32_t>(m.block_size);
        out.sessions = static_cast<int32_t>(m.sequences);
        out.sequences_running = static_cast<int32_t>(m.running);
        out.sequences_waiting = static_cast<int32_t>(m.waiting);
        out.preemptions = m.preemptions;
        out.kv_full_failures = m.kv_full_failures;
        out.tokens_prefilled = m.tokens_prefilled;
        out.tokens_generated = m.tokens_generated;
        out.prefix_tokens_reused = m.prefix_tokens_reused;
        out.steps = m.steps;
        out.step_seconds_mean = m.steps > 0 ? m.step_seconds_total / static_cast<double>(m.steps) : 0.0;
        out.step_seconds_max = m.step_seconds_max;
        out.step_seconds_last = m.step_seconds_last;
        out.busy_seconds = m.busy_seconds;
        out.generated_tokens_per_s =
            m.busy_seconds > 0 ? static_cast<double>(m.tokens_generated) / m.busy_seconds : 0.0;
        out.draft_rounds = m.speculation.rounds;
        out.draft_tokens_proposed = m.speculation.proposed;
        out.draft_tokens_accepted = m.speculation.accepted;
        out.draft_acceptance_rate = m.speculation.acceptance_rate();
        out.draft_passes = m.draft_passes;
        out.draft_seconds = m.draft_seconds;
        out.steps_ids_only = m.argmax_steps + m.sampled_steps;
        out.steps_pipelined = m.pipelined_steps;
        inlay::capi::write_out(metrics, out);
    });
}

INLAY_API inlay_status inlay_session_fork(inlay_session* session, inlay_session** out_session) {
    if (out_session) *out_session = nullptr;
    return guarded("inlay_session_fork", [&] {
        require_arg(session != nullptr, "inlay_session_fork", "session is NULL");
        require_arg(out_session != nullptr, "inlay_session_fork", "out_session is NULL");
        auto handle = std::make_unique<inlay_session>();
        handle->session = session->session->fork();
        *out_session = handle.release();
    });
}

INLAY_API inlay_status inlay_session_save(inlay_session* session, const char* path) {
    return guarded("inlay_session_save", [&] {
        require_arg(session != nullptr, "inlay_session_save", "session is NULL");
        require_arg(path != nullptr && *path != '\0', "inlay_session_save", "path is NULL or empty");
        session->session->save(path);
    });
}

INLAY_API inlay_status inlay_session_restore(inlay_session* session, const char* path) {
    return guarded("inlay_session_restore", [&] {
        require_arg(session != nullptr, "inlay_session_restore", "session is NULL");
        require_arg(path != nullptr && *path != '\0', "inlay_session_restore", "path is NULL or empty");
        session->session->restore(path);
    });
}

}  // extern "C"
