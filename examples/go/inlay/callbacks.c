// C side of the callbacks: library callbacks receive a cgo.Handle (an integer) as their
// `user` pointer and pass it on to the Go functions exported in callbacks.go. C never
// holds a Go pointer.
#include <inlay/inlay.h>

#include "_cgo_export.h"

static bool inlay_go_on_token(int32_t token, const char* piece, size_t piece_len, void* user) {
    return goOnToken(token, (char*)piece, piece_len, (uintptr_t)user);
}

static bool inlay_go_on_progress(float progress, void* user) {
    return goOnProgress(progress, (uintptr_t)user);
}

void inlay_go_set_token_callback(inlay_generate_params* params, uintptr_t handle) {
    params->on_token = inlay_go_on_token;
    params->user = (void*)handle;
}

void inlay_go_set_progress_callback(inlay_model_params* params, uintptr_t handle) {
    params->progress = inlay_go_on_progress;
    params->progress_user = (void*)handle;
}
