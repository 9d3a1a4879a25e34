/*
 * inlay.h: the stable C ABI of inlay (C99).
 *
 * inlay runs Llama-family language models (GGUF files) on the CPU inside a host
 * program. This header is the only stable interface; everything else is internal.
 *
 * Usage, in short:
 *
 *     inlay_model_params mp; inlay_model_params_init(&mp);
 *     inlay_model* model;
 *     if (inlay_model_load("model.gguf", &mp, &model) != INLAY_OK)
 *         fprintf(stderr, "%s\n", inlay_last_error());
 *     inlay_session* s; inlay_session_create(model, NULL, &s);
 *     inlay_generate_params gp; inlay_generate_params_init(&gp);
 *     gp.on_token = print_piece;                  // streaming, optional
 *     inlay_result* r;
 *     inlay_session_generate(s, "Once upon a time", &gp, &r);
 *     puts(inlay_result_text(r));
 *     inlay_result_free(r); inlay_session_free(s); inlay_model_free(model);
 *
 * Conventions
 * - Every function that can fail returns inlay_status; INLAY_OK is 0. On failure
 *   the message is available from inlay_last_error() on the same thread until the
 *   next failing call on that thread.
 * - Null or invalid arguments return INLAY_ERR_INVALID_ARGUMENT; they never crash.
 * - Params structs are passed by pointer and begin with `struct_size`; always
 *   initialise them with the matching *_params_init() function, then change fields.
 *   A NULL params pointer means "defaults". *_params_init is a macro passing the
 *   struct's size to *_params_init_size (bindings in other languages call that with
 *   the size of their own copy of the struct); the plain symbol serves programs built
 *   before it took a size (docs/ABI.md).
 * - Handles are opaque. Whoever gets a handle from a *_create / *_load call owns it
 *   and releases it with the matching *_free; *_free(NULL) does nothing.
 * - Strings are UTF-8. Returned `const char*` stay valid as long as their owner.
 *
 * Threading
 * - inlay_model is immutable once loaded and may be shared by any number of threads
 *   and sessions. inlay_model_free may be called at any time, also while its sessions
 *   exist and are inside calls on other threads: each session keeps what it needs of the
 *   model alive (weights, engine, KV budget), and the model is released when its handle
 *   and its last session are gone. The handle itself is invalid once freed (no call may
 *   take it, session_create included); its sessions go on working (fork too).
 * - inlay_session is one conversation; use it from one thread at a time (a call made
 *   while another thread is inside the same session returns INLAY_ERR_BUSY).
 *   inlay_session_cancel is the exception: it may be called from any thread.
 * - Callbacks (on_token, progress, log sink) run on the thread that made the call
 *   that triggers them (generate, load, or any call that logs).
 * - Generate calls on different sessions of one model run concurrently: the model's
 *   engine batches them on its own scheduler thread (see "runtime" below), while each
 *   on_token callback still runs on the thread that called generate.
 */
#ifndef INLAY_INLAY_H
#define INLAY_INLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  if defined(INLAY_BUILDING_LIBRARY)
#    define INLAY_API __declspec(dllexport)
#  else
#    define INLAY_API __declspec(dllimport)
#  endif
#else
#  define INLAY_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version: bumped when an existing declaration changes incompatibly. Adding
 * functions or appending fields to params structs does not change it. */
#define INLAY_ABI_VERSION 1

/* Returns INLAY_ABI_VERSION of the library actually loaded. */
INLAY_API int inlay_abi_version(void);
/* Library version string, e.g. "0.1.0". Static storage. */
INLAY_API const char* inlay_version(void);

/* ---------------------------------------------------------------- status --- */

typedef enum inlay_status {
    INLAY_OK = 0,
    INLAY_ERR_INVALID_ARGUMENT = 1, /* null pointer, bad size, value out of range */
    INLAY_ERR_IO = 2,               /* file cannot be opened, read or mapped */
    INLAY_ERR_BAD_FORMAT = 3,       /* malformed file: magic, string, count, alignment... */
    INLAY_ERR_TRUNCATED = 4,        /* file ends before the data it declares */
    INLAY_ERR_UNSUPPORTED = 5,      /* well-formed but not supported (version, type, arch) */
    INLAY_ERR_MISSING = 6,          /* a required tensor or metadata key is absent */
    INLAY_ERR_SHAPE_MISMATCH = 7,   /* a tensor's shape or type contradicts the model */
    INLAY_ERR_OUT_OF_MEMORY = 8,
    INLAY_ERR_CANCELLED = 9,        /* stopped by inlay_session_cancel or a callback */
    INLAY_ERR_CONTEXT_FULL = 10,    /* the session's context length is exhausted */
    INLAY_ERR_KV_FULL = 11,         /* no KV cache memory left for the request */
    INLAY_ERR_BUFFER_TOO_SMALL = 12,/* size-query convention: see *required */
    INLAY_ERR_BUSY = 13,            /* the session is in use by another thread */
    INLAY_ERR_INVALID_TOKEN = 14,   /* a token id outside the vocabulary */
    INLAY_ERR_INVALID_UTF8 = 15,    /* text input is not valid UTF-8 */
    INLAY_ERR_BAD_WEIGHTS = 16,     /* the model computed NaN logits: its weights (or their
                                       quantization) are broken; the message names the model */
    INLAY_ERR_INTERNAL = 99         /* a bug in inlay: please report it */
} inlay_status;

/* "INLAY_OK", "INLAY_ERR_IO", ...; "INLAY_ERR_UNKNOWN" for other values. Static storage. */
INLAY_API const char* inlay_status_name(inlay_status status);
/* Message of the last failing call on this thread ("" if none). Valid until the
 * next inlay call on this thread. */
INLAY_API const char* inlay_last_error(void);

/* ------------------------------------------------------------------- log --- */

typedef enum inlay_log_level {
    INLAY_LOG_DEBUG = 0,
    INLAY_LOG_INFO = 1,
    INLAY_LOG_WARN = 2,
    INLAY_LOG_ERROR = 3,
    INLAY_LOG_NONE = 4
} inlay_log_level;

/* Receives one complete message (no trailing newline). May be called from any
 * thread that is inside an inlay call; must be thread-safe. */
typedef void (*inlay_log_fn)(inlay_log_level level, const char* message, void* user);

/* Installs the process-wide log sink (NULL restores the default: WARN and above to
 * stderr) and the minimum level delivered. Thread-safe. */
INLAY_API void inlay_set_log_sink(inlay_log_fn sink, inlay_log_level min_level, void* user);

/* ----------------------------------------------------------------- model --- */

typedef struct inlay_model inlay_model;

/* Load progress in [0, 1]. Return false to abort the load (INLAY_ERR_CANCELLED). */
typedef bool (*inlay_progress_fn)(float progress, void* user);

/* Devices a model can run on. AUTO takes a usable GPU when this build has a GPU backend
 * and one is present, else the CPU, and logs which it took (INLAY_LOG_INFO). CUDA fails
 * with INLAY_ERR_UNSUPPORTED when the library was built without its CUDA backend or no
 * usable device has that index; the message says which. */
typedef enum inlay_device {
    INLAY_DEVICE_AUTO = 0,
    INLAY_DEVICE_CPU = 1,
    INLAY_DEVICE_CUDA = 2
} inlay_device;

typedef struct inlay_model_params {
    size_t struct_size;          /* sizeof(inlay_model_params), set by init */
    int32_t n_threads;           /* CPU threads for compute; 0 = number of cores */
    int32_t context_length;      /* max tokens per session; 0 = the model's own */
    inlay_progress_fn progress;  /* optional */
    void* progress_user;
    /* KV cache and batching (see "runtime" below); 0 / NULL = default */
    struct inlay_kv_pool* kv_pool; /* share this pool's budget; NULL = a budget of the model's own */
    int64_t kv_budget_bytes;     /* own budget; 0 = 4 sessions of context_length tokens (>= 64 blocks) */
    int32_t kv_block_size;       /* tokens per KV block of an own budget; 0 = 16 */
    int32_t batch_tokens;        /* tokens per forward pass (decode + prompt chunks); 0 = 512 */
    /* Where the model runs (fields added after the first release: a caller compiled
     * without them passes a smaller struct_size and gets the defaults) */
    int32_t device;              /* an inlay_device; 0 = INLAY_DEVICE_AUTO */
    int32_t device_index;        /* which GPU for INLAY_DEVICE_CUDA (0-based) */
    double kv_memory_fraction;   /* own KV budget as this share of the device's free memory after the
                                    weights are loaded, in (0, 1]; 0 = default (the budget above on the
                                    CPU, 0.9 on a GPU). kv_budget_bytes, when set, takes precedence. */
} inlay_model_params;

INLAY_API void inlay_model_params_init(inlay_model_params* params);
INLAY_API void inlay_model_params_init_size(inlay_model_params* params, size_t size);
#define inlay_model_params_init(params) inlay_model_params_init_size((params), sizeof *(params))

/* Loads a GGUF model. The file is memory-mapped; weights stay on disk pages until
 * used. On success *out_model owns the model. A KV budget (from context_length,
 * kv_budget_bytes or the pool) or a batch (batch_tokens) that needs more than the
 * device's memory fails with INLAY_ERR_OUT_OF_MEMORY naming the sizes, before anything is
 * allocated; out-of-range fields are INLAY_ERR_INVALID_ARGUMENT naming the value. */
INLAY_API inlay_status inlay_model_load(const char* path, const inlay_model_params* params,
                                        inlay_model** out_model);
INLAY_API void inlay_model_free(inlay_model* model);

typedef struct inlay_model_info {
    size_t struct_size;          /* set by the caller: sizeof(inlay_model_info) */
    const char* architecture;    /* "llama", ...; owned by the model */
    const char* name;            /* general.name or ""; owned by the model */
    int64_t n_params;            /* total weight elements */
    int64_t file_bytes;          /* size of the weights file */
    int32_t n_vocab;
    int32_t n_embd;
    int32_t n_layers;
    int32_t n_heads;
    int32_t n_kv_heads;
    int32_t head_dim;
    int32_t n_ff;
    int32_t context_length;      /* effective per-session limit */
    int32_t train_context_length;/* from the file */
    int32_t bos_token;           /* -1 if none */
    int32_t eos_token;           /* -1 if none */
    const char* device;          /* where the model runs: "cpu", "cuda:0", ...; owned by the model */
} inlay_model_info;

/* Fills *info. info->struct_size must be set by the caller. */
INLAY_API inlay_status inlay_model_get_info(const inlay_model* model, inlay_model_info* info);

/* ------------------------------------------------------------- tokenizer --- */

/* Size-query convention: if capacity is too small (or out is NULL with capacity 0),
 * *required receives the needed count and INLAY_ERR_BUFFER_TOO_SMALL is returned
 * (INLAY_OK when out is NULL and capacity 0 would also be reasonable, but callers can
 * rely on BUFFER_TOO_SMALL plus *required). */

typedef enum inlay_tokenize_flags {
    INLAY_TOKENIZE_ADD_BOS = 1,       /* prepend BOS if the model's vocabulary asks for it */
    INLAY_TOKENIZE_PARSE_SPECIAL = 2  /* turn special-token text such as "<s>" into its id */
} inlay_tokenize_flags;

/* Tokenizes `len` bytes of UTF-8 `text` (not NUL-terminated) into out[0..capacity).
 * *n_tokens receives the number written, or the number required. */
INLAY_API inlay_status inlay_tokenize(const inlay_model* model, const char* text, size_t len,
                                      uint32_t flags, int32_t* out, size_t capacity,
                                      size_t* n_tokens);

/* Writes the text of tokens[0..n) into out[0..capacity) and NUL-terminates it.
 * *length receives the byte length without the NUL (needed capacity is length+1).
 * Control tokens (BOS/EOS) render as nothing unless render_special is true. */
INLAY_API inlay_status inlay_detokenize(const inlay_model* model, const int32_t* tokens,
                                        size_t n, bool render_special, char* out,
                                        size_t capacity, size_t* length);

/* ------------------------------------------------------------ vocabulary --- */

/* A model's vocabulary alone, for tokenizing without loading weights (and without a
 * device). Read-only once loaded: any number of threads may use one at once. */
typedef struct inlay_vocab inlay_vocab;

/* Opens the vocabulary of `path`: a GGUF file, whole model or vocabulary only (such as
 * llama.cpp's ggml-vocab-*.gguf; no tensor is read or required), or a model folder, weights
 * or not: its tokenizer.model when it has one, else tokenizer.json with
 * tokenizer_config.json (the file inlay_model_load uses for the folder). Tokenizing with
 * it gives exactly what inlay_tokenize gives with the model. */
INLAY_API inlay_status inlay_vocab_load(const char* path, inlay_vocab** out_vocab);
INLAY_API void inlay_vocab_free(inlay_vocab* vocab);

typedef struct inlay_vocab_info {
    size_t struct_size;           /* set by the caller: sizeof(inlay_vocab_info) */
    const char* tokenizer_model;  /* "llama" (SentencePiece-style), "gpt2" (byte-level BPE); owned by the vocab */
    const char* name;             /* general.name of a GGUF file, or ""; owned by the vocab */
    int32_t n_vocab;
    int32_t bos_token;            /* -1 if none */
    int32_t eos_token;            /* -1 if none */
    bool add_bos;                 /* whether INLAY_TOKENIZE_ADD_BOS prepends bos_token */
} inlay_vocab_info;

/* Fills *info. info->struct_size must be set by the caller. */
INLAY_API inlay_status inlay_vocab_get_info(const inlay_vocab* vocab, inlay_vocab_info* info);

/* inlay_tokenize and inlay_detokenize with a vocabulary handle: same flags, same
 * size-query convention, same results. */
INLAY_API inlay_status inlay_vocab_tokenize(const inlay_vocab* vocab, const char* text, size_t len,
                                            uint32_t flags, int32_t* out, size_t capacity,
                                            size_t* n_tokens);
INLAY_API inlay_status inlay_vocab_detokenize(const inlay_vocab* vocab, const int32_t* tokens,
                                              size_t n, bool render_special, char* out,
                                              size_t capacity, size_t* length);

/* --------------------------------------------------------------- session --- */

typedef struct inlay_session inlay_session;

/* Speculative decoding: cheap proposals for the next tokens, checked by the model in one
 * forward pass (several tokens per pass when they are right). The output is the model's
 * own: greedy decoding gives exactly the tokens it gives without speculation, sampling
 * follows the same distribution (the standard rejection rule). How many tokens are
 * proposed adapts per call, from n_draft_min up to n_draft, to the acceptance seen and to
 * what a forward pass costs; with poor acceptance it backs off to nothing but occasional
 * probes. */
typedef enum inlay_speculation {
    INLAY_SPECULATION_NONE = 0,
    INLAY_SPECULATION_DRAFT_MODEL = 1,   /* a smaller model with the same vocabulary proposes */
    INLAY_SPECULATION_PROMPT_LOOKUP = 2  /* the tokens that followed an earlier occurrence of the
                                            conversation's last few tokens are proposed */
} inlay_speculation;

typedef struct inlay_session_params {
    size_t struct_size;
    int32_t context_length;  /* 0 = the model's context_length */
    int32_t reserved;          /* ignored: the padding of ABI 1's struct, which old callers
                                  may leave uninitialised */
    /* speculative decoding (appended: older struct_size values get the defaults) */
    int32_t speculation;       /* an inlay_speculation; default INLAY_SPECULATION_NONE */
    inlay_model* draft_model;  /* INLAY_SPECULATION_DRAFT_MODEL: a model loaded by the host. Its
                                  vocabulary must be the session model's (checked here:
                                  INLAY_ERR_INVALID_ARGUMENT names the difference). Many sessions
                                  may share it; the session keeps the draft's weights alive, so
                                  the handle may be freed before the session. The draft's KV
                                  lives in a pool of its own beside the model's. */
    int32_t n_draft;           /* proposals per step at most, 1..64; default 8 */
    int32_t n_draft_min;       /* proposals per step at least, 0..n_draft; default 0 (adaptive) */
    float p_min;               /* draft model: stop proposing at a token it gives less than this
                                  probability; default 0.5; 0 = never */
} inlay_session_params;

INLAY_API void inlay_session_params_init(inlay_session_params* params);
INLAY_API void inlay_session_params_init_size(inlay_session_params* params, size_t size);
#define inlay_session_params_init(params) inlay_session_params_init_size((params), sizeof *(params))

/* A session is one conversation: it keeps its token history and KV cache so that a
 * later generate call only processes the new tokens. */
INLAY_API inlay_status inlay_session_create(inlay_model* model, const inlay_session_params* params,
                                            inlay_session** out_session);
INLAY_API void inlay_session_free(inlay_session* session);

/* Forgets history and KV; the session can start a new conversation. */
INLAY_API inlay_status inlay_session_reset(inlay_session* session);

/* Number of tokens in the session's history (prompt and generated). INLAY_ERR_BUSY while
 * a call runs on the session (from another thread or its own on_token): the history is
 * changing then. */
INLAY_API inlay_status inlay_session_n_tokens(const inlay_session* session, size_t* n_tokens);

/* Requests that a running generate call on this session stop. Safe from any thread
 * and from callbacks; the generate call returns INLAY_ERR_CANCELLED after at most one
 * more token. A cancel that arrives while no call runs is ignored. */
INLAY_API inlay_status inlay_session_cancel(inlay_session* session);

/* Called for every generated token with the text it completes. `piece` is valid UTF-8
 * (a token that ends inside a multi-byte character yields "" and the character comes
 * with the token that completes it) and valid only during the call. Return false to
 * stop generation (the result then has stop_reason INLAY_STOP_CALLBACK). */
typedef bool (*inlay_token_fn)(int32_t token, const char* piece, size_t piece_len, void* user);

typedef struct inlay_generate_params {
    size_t struct_size;
    int32_t max_tokens;          /* generation budget; default 256; 0 = only prefill */
    /* sampling: temperature <= 0 means greedy */
    float temperature;           /* default 0.8 */
    int32_t top_k;               /* default 40; 0 = off */
    float top_p;                 /* default 0.95; 1 = off */
    float min_p;                 /* default 0.05; 0 = off */
    float repeat_penalty;        /* default 1.0 (off) */
    float frequency_penalty;     /* default 0 */
    float presence_penalty;      /* default 0 */
    int32_t penalty_last_n;      /* window of recent tokens; default 64; -1 = context */
    uint64_t seed;               /* default 0xFFFFFFFFFFFFFFFF = random */
    /* stopping */
    bool ignore_eos;             /* default false: stop at end-of-generation tokens */
    const char* const* stop;     /* optional array of stop strings, n_stop long */
    size_t n_stop;
    /* prompt handling */
    bool add_bos;                /* default true: prepend BOS at the start of a conversation
                                    when the vocabulary asks for it */
    bool parse_special;          /* default true: "<s>" etc. in the prompt become special ids */
    /* streaming */
    inlay_token_fn on_token;     /* optional */
    void* user;
} inlay_generate_params;

INLAY_API void inlay_generate_params_init(inlay_generate_params* params);
INLAY_API void inlay_generate_params_init_size(inlay_generate_params* params, size_t size);
#define inlay_generate_params_init(params) inlay_generate_params_init_size((params), sizeof *(params))

typedef enum inlay_stop_reason {
    INLAY_STOP_NONE = 0,        /* max_tokens was 0 */
    INLAY_STOP_EOG = 1,         /* end-of-generation token */
    INLAY_STOP_MAX_TOKENS = 2,
    INLAY_STOP_STRING = 3,      /* a stop string appeared (it is not part of the text) */
    INLAY_STOP_CALLBACK = 4,    /* on_token returned false */
    INLAY_STOP_CANCELLED = 5,
    INLAY_STOP_CONTEXT_FULL = 6
} inlay_stop_reason;

typedef struct inlay_result inlay_result;

/* Appends `prompt` (UTF-8, NUL-terminated; may be "") to the conversation and
 * generates. With an empty history and add_bos, BOS starts the conversation. On
 * INLAY_OK and INLAY_ERR_CANCELLED, *out_result (if out_result is not NULL) holds what
 * was produced and must be freed; on other errors it is NULL. Reaching the context
 * length while generating is INLAY_OK with stop reason INLAY_STOP_CONTEXT_FULL (so is a
 * prompt that fills the context exactly: no token is generated); a prompt that does not
 * fit at all is INLAY_ERR_CONTEXT_FULL and changes nothing. When text was
 * held back at the end (a partial stop-string match that did not complete, or bytes of an
 * unfinished character), on_token is called once more with token -1 and that text. */
INLAY_API inlay_status inlay_session_generate(inlay_session* session, const char* prompt,
                                              const inlay_generate_params* params,
                                              inlay_result** out_result);

/* Same, with the new tokens given as ids (nothing is added, not even BOS). */
INLAY_API inlay_status inlay_session_generate_tokens(inlay_session* session, const int32_t* tokens,
                                                     size_t n_tokens,
                                                     const inlay_generate_params* params,
                                                     inlay_result** out_result);

INLAY_API void inlay_result_free(inlay_result* result);
/* Generated text (NUL-terminated, UTF-8), owned by the result. */
INLAY_API const char* inlay_result_text(const inlay_result* result);
/* Generated token ids, owned by the result; *n receives the count. */
INLAY_API const int32_t* inlay_result_tokens(const inlay_result* result, size_t* n);
/* Prompt token ids processed by this call (BOS included if added). */
INLAY_API const int32_t* inlay_result_prompt_tokens(const inlay_result* result, size_t* n);
INLAY_API inlay_stop_reason inlay_result_stop_reason(const inlay_result* result);

typedef struct inlay_timings {
    size_t struct_size;       /* set by the caller */
    int64_t prompt_tokens;    /* tokens prefilled by this call */
    int64_t generated_tokens;
    double prefill_s;         /* wall time of the prompt batch */
    double decode_s;          /* wall time of the single-token steps */
    double prefill_tokens_per_s;
    double decode_tokens_per_s;
    int64_t prompt_tokens_reused; /* of prompt_tokens, KV found in the prefix cache (not computed) */
    /* speculative decoding in this call (appended) */
    int64_t draft_tokens_proposed;
    int64_t draft_tokens_accepted;
} inlay_timings;

INLAY_API inlay_status inlay_result_timings(const inlay_result* result, inlay_timings* timings);

/* Teacher-forced scoring: appends tokens[0..n) to the session and writes the logits
 * predicting the token after each of them into logits[i * n_vocab .. (i+1) * n_vocab).
 * `logits` must hold n * n_vocab floats (capacity is the number of floats). */
INLAY_API inlay_status inlay_session_eval_logits(inlay_session* session, const int32_t* tokens,
                                                 size_t n, float* logits, size_t capacity);

/* --------------------------------------------------------------- runtime --- */
/*
 * Many sessions at once. Each loaded model has one engine: a scheduler thread that runs
 * the generate and eval calls of all its sessions together, one forward pass per step
 * over the next token of every generating session plus chunks of prompts still being
 * processed (continuous batching; a long prompt never stalls the others). Calls made from
 * many threads are therefore batched, and a session's output is the same alone or among
 * many. on_token runs on the thread that called generate, never on the scheduler thread,
 * so a slow callback only delays its own session. Cancel works at any time.
 *
 * KV cache: fixed-size blocks (16 tokens by default) from a budget reserved per model,
 * or shared by several models through an inlay_kv_pool. Blocks are shared between
 * sessions: inlay_session_fork shares its source's blocks (copy-on-write), and a prompt
 * that starts with the same tokens as an earlier one (in whole blocks) reuses their KV
 * instead of computing it. When blocks run out: cached blocks nobody uses are evicted,
 * then idle sessions' KV is released (least recently used first; their next call
 * recomputes it), then the youngest running calls are preempted (they wait and later
 * recompute, with identical results). A call that cannot get a block while it is the only
 * one running on its model fails with INLAY_ERR_KV_FULL (generate: *out_result holds what
 * was produced). Blocks of other models' running calls are never taken. Every block
 * returns to the pool when its sessions are freed.
 */
typedef struct inlay_kv_pool inlay_kv_pool;

typedef struct inlay_kv_pool_params {
    size_t struct_size;
    int64_t budget_bytes;    /* KV memory per block geometry; used when budget_blocks is 0;
                                default 256 MiB */
    int64_t budget_blocks;   /* KV blocks per block geometry; 0 = from budget_bytes */
    int32_t block_size;      /* tokens per block; default 16 */
} inlay_kv_pool_params;

INLAY_API void inlay_kv_pool_params_init(inlay_kv_pool_params* params);
INLAY_API void inlay_kv_pool_params_init_size(inlay_kv_pool_params* params, size_t size);
#define inlay_kv_pool_params_init(params) inlay_kv_pool_params_init_size((params), sizeof *(params))

/* A KV budget for models loaded with inlay_model_params.kv_pool set to it. Models whose
 * block geometry (layers x KV heads x head dim x block size x type) matches share one set
 * of blocks; a model of another geometry gets a pool of its own with the same budget.
 * Memory is reserved when the first model of a geometry loads; pages are only touched
 * when used. */
INLAY_API inlay_status inlay_kv_pool_create(const inlay_kv_pool_params* params, inlay_kv_pool** out_pool);
/* Releases the caller's reference; models loaded with the pool keep it alive. */
INLAY_API void inlay_kv_pool_free(inlay_kv_pool* pool);

/* Caps the KV blocks this model's sessions may hold in its pool (0 = no cap). Lowering it
 * below what they hold releases idle sessions' KV and preempts running calls (youngest
 * first) until it fits, except the last running call, which fails with INLAY_ERR_KV_FULL
 * if it needs more. Thread-safe; takes effect at the next step. */
INLAY_API inlay_status inlay_model_set_kv_cap(inlay_model* model, int64_t max_blocks);

typedef struct inlay_metrics {
    size_t struct_size;            /* set by the caller: sizeof(inlay_metrics) */
    /* the model's KV pool (a shared pool: all its models together) */
    int64_t blocks_total;
    int64_t blocks_free;           /* not referenced by any session (includes blocks_cached) */
    int64_t blocks_cached;         /* unreferenced but kept for prefix reuse */
    int64_t blocks_shared;         /* referenced by more than one session */
    /* this model */
    int64_t blocks_held;           /* referenced by this model's sessions */
    int64_t block_cap;             /* 0 = none */
    int32_t block_size;            /* tokens per block */
    int32_t sessions;              /* open sessions */
    int32_t sequences_running;     /* calls in the batch now */
    int32_t sequences_waiting;     /* calls queued: new, or preempted and waiting to recompute */
    int64_t preemptions;           /* since load */
    int64_t kv_full_failures;      /* calls failed with INLAY_ERR_KV_FULL since load */
    int64_t tokens_prefilled;      /* prompt tokens computed (recomputation included) */
    int64_t tokens_generated;      /* tokens sampled */
    int64_t prefix_tokens_reused;  /* prompt tokens whose KV came from the prefix cache */
    int64_t steps;                 /* forward passes */
    double step_seconds_mean;      /* per forward pass, sampling included */
    double step_seconds_max;
    double step_seconds_last;
    double busy_seconds;           /* wall time with at least one call in progress */
    double generated_tokens_per_s; /* aggregate: tokens_generated / busy_seconds */
    /* speculative decoding, every session of this model (appended) */
    int64_t draft_rounds;          /* forward passes that checked proposals, per session */
    int64_t draft_tokens_proposed;
    int64_t draft_tokens_accepted;
    double draft_acceptance_rate;  /* accepted / proposed; 0 when nothing was proposed */
    int64_t draft_passes;          /* forward passes of draft models */
    double draft_seconds;          /* their time */
    /* how forward passes ran (appended) */
    int64_t steps_ids_only;        /* tokens chosen where the logits are: only ids came back */
    int64_t steps_pipelined;       /* queued while the pass before still ran (a GPU's steady decoding;
                                      INLAY_PIPELINING=never turns it off, =always on the CPU too) */
} inlay_metrics;

/* Fills *metrics (metrics->struct_size must be set). Thread-safe. */
INLAY_API inlay_status inlay_model_get_metrics(const inlay_model* model, inlay_metrics* metrics);

/* Speculative decoding over every generate call of one session so far. */
typedef struct inlay_speculation_stats {
    size_t struct_size;        /* set by the caller: sizeof(inlay_speculation_stats) */
    int64_t rounds;            /* forward passes that checked proposals */
    int64_t tokens_proposed;
    int64_t tokens_accepted;
    double acceptance_rate;    /* accepted / proposed; 0 when nothing was proposed */
} inlay_speculation_stats;

INLAY_API inlay_status inlay_session_get_speculation_stats(const inlay_session* session,
                                                           inlay_speculation_stats* stats);

/* A new session continuing `session`'s conversation. It shares the KV blocks of the
 * source (nothing is recomputed; a shared block is copied only when one of them writes
 * into it). The source must not be in a call (INLAY_ERR_BUSY). Free it as any session. */
INLAY_API inlay_status inlay_session_fork(inlay_session* session, inlay_session** out_session);

/* Writes the conversation (tokens and KV cache) to `path`: a versioned file with a
 * fingerprint of the model (architecture, dimensions, vocabulary, weights) and checksums.
 * Not while the session is in a call (INLAY_ERR_BUSY). */
INLAY_API inlay_status inlay_session_save(inlay_session* session, const char* path);

/* Replaces the session's conversation with the one saved in `path`; it continues exactly
 * as the saved session would have. The file is fully validated first and the session is
 * unchanged on error: INLAY_ERR_IO (unreadable), INLAY_ERR_TRUNCATED, INLAY_ERR_BAD_FORMAT
 * (not a session file, corrupt), INLAY_ERR_UNSUPPORTED (another format version),
 * INLAY_ERR_SHAPE_MISMATCH (saved from another model or KV geometry),
 * INLAY_ERR_CONTEXT_FULL (longer than the session's context), INLAY_ERR_KV_FULL. */
INLAY_API inlay_status inlay_session_restore(inlay_session* session, const char* path);

/* ------------------------------------------------------------------ chat --- */
/*
 * Chat: a conversation given as {role, content} messages is rendered with the model's
 * chat template (GGUF tokenizer.chat_template, or chat_template.jinja /
 * tokenizer_config.json for a model folder; a Jinja subset that renders the Qwen3 and
 * Llama 3 templates exactly) and generated on a session. The session keeps its KV cache
 * across turns: each call renders the whole conversation, compares its tokens with the
 * session's history and processes only where they differ (usually just the new
 * messages; a template that rewrites earlier turns, like Qwen3 dropping old <think>
 * blocks, moves that point back). Pass each reply back as an "assistant" message.
 */
typedef struct inlay_chat_message {
    const char* role;     /* "system", "user", "assistant", "tool", ...: UTF-8, NUL-terminated */
    const char* content;  /* UTF-8, NUL-terminated */
} inlay_chat_message;

typedef enum inlay_thinking {
    INLAY_THINKING_DEFAULT = 0, /* the template's default (enable_thinking is not defined) */
    INLAY_THINKING_OFF = 1,     /* enable_thinking = false (Qwen3: an empty <think> block) */
    INLAY_THINKING_ON = 2       /* enable_thinking = true */
} inlay_thinking;

typedef struct inlay_chat_params {
    size_t struct_size;
    inlay_thinking thinking;     /* default INLAY_THINKING_DEFAULT */
    bool add_generation_prompt;  /* default true: end with the header of the assistant's turn */
    const char* chat_template;   /* optional Jinja source used instead of the model's; NULL = the model's */
} inlay_chat_params;

INLAY_API void inlay_chat_params_init(inlay_chat_params* params);
INLAY_API void inlay_chat_params_init_size(inlay_chat_params* params, size_t size);
#define inlay_chat_params_init(params) inlay_chat_params_init_size((params), sizeof *(params))

/* Renders messages[0..n) with the chat template into out[0..capacity), NUL-terminated;
 * *length receives the byte length without the NUL (size-query convention above).
 * Errors: INLAY_ERR_MISSING (the model has no template and none is given),
 * INLAY_ERR_BAD_FORMAT (a template syntax or evaluation error; the message gives line
 * and column), INLAY_ERR_UNSUPPORTED (a Jinja feature inlay lacks),
 * INLAY_ERR_INVALID_ARGUMENT (also: the template rejects the conversation through
 * raise_exception, e.g. roles that do not alternate), INLAY_ERR_INVALID_UTF8. */
INLAY_API inlay_status inlay_chat_apply_template(const inlay_model* model, const inlay_chat_message* messages,
                                                 size_t n, const inlay_chat_params* params, char* out,
                                                 size_t capacity, size_t* length);

/* Renders the conversation, processes what the session lacks of it and generates the
 * reply, with the parameters, result and statuses of inlay_session_generate
 * (gen_params.add_bos and parse_special do not apply: special-token text in the
 * rendered conversation is always parsed, and BOS is added only when the vocabulary
 * asks for it and the template did not write it). inlay_result_prompt_tokens gives the
 * tokens this call processed; the session's history afterwards is the whole rendered
 * conversation plus the reply. INLAY_ERR_CONTEXT_FULL if the conversation alone does
 * not fit the session. NULL chat_params / gen_params: defaults. */
INLAY_API inlay_status inlay_session_chat(inlay_session* session, const inlay_chat_message* messages, size_t n,
                                          const inlay_chat_params* chat_params,
                                          const inlay_generate_params* gen_params, inlay_result** out_result);

#ifdef __cplusplus
}
#endif

#endif /* INLAY_INLAY_H */
