"""ctypes declarations of include/inlay/inlay.h: the structs, callback types and every
function this package calls, field for field and parameter for parameter as the header
has them (tests/test_declarations.py compares them with the header).

Handles (inlay_model*, inlay_session*, inlay_result*, inlay_kv_pool*, inlay_vocab*) are opaque and
travel as c_void_p. C enums are int. Params structs are filled by the library's
*_params_init_size with ctypes.sizeof of these declarations (docs/ABI.md), so a library
newer than this file gives its defaults to the fields it has and we do not know.
"""
from ctypes import (CFUNCTYPE, POINTER, Structure, c_bool, c_char, c_char_p, c_double, c_float, c_int,
                    c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p)

ABI_VERSION = 1  # INLAY_ABI_VERSION of the header these declarations copy

# Callback types. The progress and token callbacks run on the thread that made the call.
progress_fn = CFUNCTYPE(c_bool, c_float, c_void_p)
token_fn = CFUNCTYPE(c_bool, c_int32, POINTER(c_char), c_size_t, c_void_p)
log_fn = CFUNCTYPE(None, c_int, c_char_p, c_void_p)


class ModelParams(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("n_threads", c_int32),
        ("context_length", c_int32),
        ("progress", progress_fn),
        ("progress_user", c_void_p),
        ("kv_pool", c_void_p),
        ("kv_budget_bytes", c_int64),
        ("kv_block_size", c_int32),
        ("batch_tokens", c_int32),
        ("device", c_int32),
        ("device_index", c_int32),
        ("kv_memory_fraction", c_double),
    ]


class ModelInfo(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("architecture", c_char_p),
        ("name", c_char_p),
        ("n_params", c_int64),
        ("file_bytes", c_int64),
        ("n_vocab", c_int32),
        ("n_embd", c_int32),
        ("n_layers", c_int32),
        ("n_heads", c_int32),
        ("n_kv_heads", c_int32),
        ("head_dim", c_int32),
        ("n_ff", c_int32),
        ("context_length", c_int32),
        ("train_context_length", c_int32),
        ("bos_token", c_int32),
        ("eos_token", c_int32),
        ("device", c_char_p),
    ]


class VocabInfo(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("tokenizer_model", c_char_p),
        ("name", c_char_p),
        ("n_vocab", c_int32),
        ("bos_token", c_int32),
        ("eos_token", c_int32),
        ("add_bos", c_bool),
    ]


class SessionParams(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("context_length", c_int32),
        ("reserved", c_int32),
        ("speculation", c_int32),
        ("draft_model", c_void_p),
        ("n_draft", c_int32),
        ("n_draft_min", c_int32),
        ("p_min", c_float),
    ]


class GenerateParams(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("max_tokens", c_int32),
        ("temperature", c_float),
        ("top_k", c_int32),
        ("top_p", c_float),
        ("min_p", c_float),
        ("repeat_penalty", c_float),
        ("frequency_penalty", c_float),
        ("presence_penalty", c_float),
        ("penalty_last_n", c_int32),
        ("seed", c_uint64),
        ("ignore_eos", c_bool),
        ("stop", POINTER(c_char_p)),
        ("n_stop", c_size_t),
        ("add_bos", c_bool),
        ("parse_special", c_bool),
        ("on_token", token_fn),
        ("user", c_void_p),
    ]


class Timings(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("prompt_tokens", c_int64),
        ("generated_tokens", c_int64),
        ("prefill_s", c_double),
        ("decode_s", c_double),
        ("prefill_tokens_per_s", c_double),
        ("decode_tokens_per_s", c_double),
        ("prompt_tokens_reused", c_int64),
        ("draft_tokens_proposed", c_int64),
        ("draft_tokens_accepted", c_int64),
    ]


class ChatMessage(Structure):
    _fields_ = [
        ("role", c_char_p),
        ("content", c_char_p),
    ]


class ChatParams(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("thinking", c_int),
        ("add_generation_prompt", c_bool),
        ("chat_template", c_char_p),
    ]


# name: (restype, argtypes). Enum parameters and results (inlay_status, inlay_stop_reason,
# inlay_log_level) are c_int.
FUNCTIONS = {
    "inlay_abi_version": (c_int, []),
    "inlay_version": (c_char_p, []),
    "inlay_status_name": (c_char_p, [c_int]),
    "inlay_last_error": (c_char_p, []),
    "inlay_set_log_sink": (None, [log_fn, c_int, c_void_p]),
    "inlay_model_params_init_size": (None, [POINTER(ModelParams), c_size_t]),
    "inlay_model_load": (c_int, [c_char_p, POINTER(ModelParams), POINTER(c_void_p)]),
    "inlay_model_free": (None, [c_void_p]),
    "inlay_model_get_info": (c_int, [c_void_p, POINTER(ModelInfo)]),
    "inlay_tokenize": (c_int, [c_void_p, c_char_p, c_size_t, c_uint32, POINTER(c_int32), c_size_t,
                               POINTER(c_size_t)]),
    "inlay_detokenize": (c_int, [c_void_p, POINTER(c_int32), c_size_t, c_bool, POINTER(c_char), c_size_t,
                                 POINTER(c_size_t)]),
    "inlay_vocab_load": (c_int, [c_char_p, POINTER(c_void_p)]),
    "inlay_vocab_free": (None, [c_void_p]),
    "inlay_vocab_get_info": (c_int, [c_void_p, POINTER(VocabInfo)]),
    "inlay_vocab_tokenize": (c_int, [c_void_p, c_char_p, c_size_t, c_uint32, POINTER(c_int32), c_size_t,
                                     POINTER(c_size_t)]),
    "inlay_vocab_detokenize": (c_int, [c_void_p, POINTER(c_int32), c_size_t, c_bool, POINTER(c_char), c_size_t,
                                       POINTER(c_size_t)]),
    "inlay_session_params_init_size": (None, [POINTER(SessionParams), c_size_t]),
    "inlay_session_create": (c_int, [c_void_p, POINTER(SessionParams), POINTER(c_void_p)]),
    "inlay_session_free": (None, [c_void_p]),
    "inlay_session_reset": (c_int, [c_void_p]),
    "inlay_session_n_tokens": (c_int, [c_void_p, POINTER(c_size_t)]),
    "inlay_session_cancel": (c_int, [c_void_p]),
    "inlay_generate_params_init_size": (None, [POINTER(GenerateParams), c_size_t]),
    "inlay_session_generate": (c_int, [c_void_p, c_char_p, POINTER(GenerateParams), POINTER(c_void_p)]),
    "inlay_session_generate_tokens": (c_int, [c_void_p, POINTER(c_int32), c_size_t, POINTER(GenerateParams),
                                              POINTER(c_void_p)]),
    "inlay_result_free": (None, [c_void_p]),
    "inlay_result_text": (c_char_p, [c_void_p]),
    "inlay_result_tokens": (POINTER(c_int32), [c_void_p, POINTER(c_size_t)]),
    "inlay_result_prompt_tokens": (POINTER(c_int32), [c_void_p, POINTER(c_size_t)]),
    "inlay_result_stop_reason": (c_int, [c_void_p]),
    "inlay_result_timings": (c_int, [c_void_p, POINTER(Timings)]),
    "inlay_chat_params_init_size": (None, [POINTER(ChatParams), c_size_t]),
    "inlay_chat_apply_template": (c_int, [c_void_p, POINTER(ChatMessage), c_size_t, POINTER(ChatParams),
                                          POINTER(c_char), c_size_t, POINTER(c_size_t)]),
    "inlay_session_chat": (c_int, [c_void_p, POINTER(ChatMessage), c_size_t, POINTER(ChatParams),
                                   POINTER(GenerateParams), POINTER(c_void_p)]),
}

# The header's C types of handles: opaque, passed as c_void_p.
HANDLE_TYPES = ("inlay_model", "inlay_session", "inlay_result", "inlay_kv_pool", "inlay_vocab")

STRUCTS = {
    "inlay_model_params": ModelParams,
    "inlay_model_info": ModelInfo,
    "inlay_vocab_info": VocabInfo,
    "inlay_session_params": SessionParams,
    "inlay_generate_params": GenerateParams,
    "inlay_timings": Timings,
    "inlay_chat_message": ChatMessage,
    "inlay_chat_params": ChatParams,
}

CALLBACKS = {
    "inlay_progress_fn": progress_fn,
    "inlay_token_fn": token_fn,
    "inlay_log_fn": log_fn,
}

ENUMS = ("inlay_status", "inlay_stop_reason", "inlay_log_level", "inlay_device", "inlay_thinking",
         "inlay_speculation", "inlay_tokenize_flags")
