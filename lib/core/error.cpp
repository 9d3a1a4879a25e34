#include "core/error.h"

namespace inlay {

const char* status_name(inlay_status status) noexcept {
    switch (status) {
        case INLAY_OK: return "INLAY_OK";
        case INLAY_ERR_INVALID_ARGUMENT: return "INLAY_ERR_INVALID_ARGUMENT";
        case INLAY_ERR_IO: return "INLAY_ERR_IO";
        case INLAY_ERR_BAD_FORMAT: return "INLAY_ERR_BAD_FORMAT";
        case INLAY_ERR_TRUNCATED: return "INLAY_ERR_TRUNCATED";
        case INLAY_ERR_UNSUPPORTED: return "INLAY_ERR_UNSUPPORTED";
        case INLAY_ERR_MISSING: return "INLAY_ERR_MISSING";
        case INLAY_ERR_SHAPE_MISMATCH: return "INLAY_ERR_SHAPE_MISMATCH";
        case INLAY_ERR_OUT_OF_MEMORY: return "INLAY_ERR_OUT_OF_MEMORY";
        case INLAY_ERR_CANCELLED: return "INLAY_ERR_CANCELLED";
        case INLAY_ERR_CONTEXT_FULL: return "INLAY_ERR_CONTEXT_FULL";
        case INLAY_ERR_KV_FULL: return "INLAY_ERR_KV_FULL";
        case INLAY_ERR_BUFFER_TOO_SMALL: return "INLAY_ERR_BUFFER_TOO_SMALL";
        case INLAY_ERR_BUSY: return "INLAY_ERR_BUSY";
        case INLAY_ERR_INVALID_TOKEN: return "INLAY_ERR_INVALID_TOKEN";
        case INLAY_ERR_INVALID_UTF8: return "INLAY_ERR_INVALID_UTF8";
        case INLAY_ERR_BAD_WEIGHTS: return "INLAY_ERR_BAD_WEIGHTS";
        case INLAY_ERR_INTERNAL: return "INLAY_ERR_INTERNAL";
    }
    return "INLAY_ERR_UNKNOWN";
}

}  // namespace inlay
