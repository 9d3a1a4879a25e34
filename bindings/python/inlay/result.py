"""What a generate or chat call produced, copied out of the C inlay_result (which is
freed at once, so a Result has no lifetime to manage)."""
import ctypes
import dataclasses
import enum

from . import _capi


class StopReason(enum.IntEnum):
    """inlay_stop_reason. A reason a newer library adds comes through as a plain int."""
    NONE = 0
    EOG = 1
    MAX_TOKENS = 2
    STRING = 3
    CALLBACK = 4
    CANCELLED = 5
    CONTEXT_FULL = 6


@dataclasses.dataclass(frozen=True)
class Timings:
    prompt_tokens: int
    generated_tokens: int
    prefill_s: float
    decode_s: float
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    prompt_tokens_reused: int
    draft_tokens_proposed: int
    draft_tokens_accepted: int


@dataclasses.dataclass(frozen=True)
class Result:
    text: str
    tokens: list
    prompt_tokens: list
    stop_reason: object  # StopReason, or int
    timings: Timings

    @property
    def cancelled(self):
        return self.stop_reason == StopReason.CANCELLED


def _ids(lib, fn, handle):
    n = ctypes.c_size_t(0)
    ptr = fn(handle, ctypes.byref(n))
    return [ptr[i] for i in range(n.value)] if ptr else []


def take_result(lib, handle):
    """Copies the C result `handle` (a c_void_p) into a Result and frees it."""
    try:
        t = _capi.Timings()
        t.struct_size = ctypes.sizeof(t)
        lib.check(lib.inlay_result_timings(handle, ctypes.byref(t)))
        code = lib.inlay_result_stop_reason(handle)
        try:
            reason = StopReason(code)
        except ValueError:
            reason = code
        return Result(
            text=(lib.inlay_result_text(handle) or b"").decode("utf-8"),
            tokens=_ids(lib, lib.inlay_result_tokens, handle),
            prompt_tokens=_ids(lib, lib.inlay_result_prompt_tokens, handle),
            stop_reason=reason,
            timings=Timings(**{name: getattr(t, name) for name, _ in _capi.Timings._fields_[1:]}),
        )
    finally:
        lib.inlay_result_free(handle)
