#include "sampling/sampling_params.h"

#include <cmath>

#include "core/error.h"

namespace inlay {

namespace {

void require_finite(float value, const char* field) {
    if (!std::isfinite(value)) fail(INLAY_ERR_INVALID_ARGUMENT, "sampling: {} must be finite (got {})", field, value);
}

}  // namespace

void validate(const SamplingParams& params) {
    require_finite(params.temperature, "temperature");
    if (std::isnan(params.top_p) || !(params.top_p > 0.0f && params.top_p <= 1.0f))
        fail(INLAY_ERR_INVALID_ARGUMENT, "sampling: top_p must be in (0, 1] (got {})", params.top_p);
    require_finite(params.min_p, "min_p");
    if (params.min_p > 1.0f)
        fail(INLAY_ERR_INVALID_ARGUMENT, "sampling: min_p must be at most 1 (got {})", params.min_p);
    require_finite(params.repeat_penalty, "repeat_penalty");
    if (params.repeat_penalty <= 0.0f)
        fail(INLAY_ERR_INVALID_ARGUMENT, "sampling: repeat_penalty must be > 0 (got {})", params.repeat_penalty);
    require_finite(params.frequency_penalty, "frequency_penalty");
    require_finite(params.presence_penalty, "presence_penalty");
    if (params.penalty_last_n < -1)
        fail(INLAY_ERR_INVALID_ARGUMENT, "sampling: penalty_last_n must be >= -1 (got {})", params.penalty_last_n);
}

bool penalties_active(const SamplingParams& params) noexcept {
    if (params.penalty_last_n == 0) return false;
    return params.repeat_penalty != 1.0f || params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f;
}

}  // namespace inlay
