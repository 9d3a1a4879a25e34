/*
 * simple: the smallest complete use of inlay's C ABI (C99).
 *
 *     simple MODEL [PROMPT]
 *
 * Loads MODEL, generates up to 64 tokens greedily after PROMPT (default "Once upon a
 * time"; "" starts from BOS alone), streams the text to stdout as it is produced,
 * prints the timings to stderr and frees everything. The environment variable
 * INLAY_N_THREADS, if set, chooses the number of compute threads.
 */
#include <stdio.h>
#include <stdlib.h>

#include "inlay/inlay.h"

static bool print_piece(int32_t token, const char* piece, size_t len, void* user) {
    (void)token;
    (void)user;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return true; /* keep going */
}

int main(int argc, char** argv) {
    const char* prompt = argc > 2 ? argv[2] : "Once upon a time";
    inlay_model_params mp;
    inlay_generate_params gp;
    inlay_model* model = NULL;
    inlay_session* session = NULL;
    inlay_result* result = NULL;
    inlay_timings timings;
    inlay_status status;
    const char* threads = getenv("INLAY_N_THREADS");
    int exit_code = 1;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s MODEL [PROMPT]\n", argv[0]);
        return 2;
    }

    inlay_model_params_init(&mp);
    if (threads) mp.n_threads = atoi(threads);
    if (inlay_model_load(argv[1], &mp, &model) != INLAY_OK) goto done;
    if (inlay_session_create(model, NULL, &session) != INLAY_OK) goto done;

    inlay_generate_params_init(&gp);
    gp.max_tokens = 64;
    gp.temperature = 0.0f; /* greedy: the same text every run */
    gp.on_token = print_piece;
    status = inlay_session_generate(session, prompt, &gp, &result);
    if (status != INLAY_OK) goto done;
    printf("\n");

    timings.struct_size = sizeof(timings);
    if (inlay_result_timings(result, &timings) != INLAY_OK) goto done;
    fprintf(stderr, "prompt: %lld tokens in %.3f s (%.1f tokens/s)\n", (long long)timings.prompt_tokens,
            timings.prefill_s, timings.prefill_tokens_per_s);
    fprintf(stderr, "generated: %lld tokens in %.3f s (%.1f tokens/s)\n", (long long)timings.generated_tokens,
            timings.prefill_s + timings.decode_s, timings.decode_tokens_per_s);
    exit_code = 0;

done:
    if (exit_code != 0) fprintf(stderr, "simple: %s\n", inlay_last_error());
    inlay_result_free(result);
    inlay_session_free(session);
    inlay_model_free(model);
    return exit_code;
}
