"""Chat conversations into C: messages as an inlay_chat_message array, and
inlay_chat_params. The encoded strings are referenced by the array (ctypes keeps them
in the structures' _objects), so the array keeps them alive through the call."""
import ctypes
import enum
from collections.abc import Mapping

from . import _capi
from ._text import to_cstr


class Thinking(enum.IntEnum):
    """inlay_thinking: enable_thinking for templates that use it (Qwen3)."""
    DEFAULT = 0
    OFF = 1
    ON = 2


def _thinking(value):
    if value is None:
        return Thinking.DEFAULT
    if isinstance(value, bool):
        return Thinking.ON if value else Thinking.OFF
    return Thinking(value)


def _message(i, m):
    if isinstance(m, Mapping):
        role, content = m["role"], m["content"]
    else:
        role, content = m
    return _capi.ChatMessage(to_cstr(role, "messages[%d].role" % i), to_cstr(content, "messages[%d].content" % i))


def chat_arguments(lib, messages, add_generation_prompt, thinking, template):
    """(message array, count, ChatParams) for inlay_chat_apply_template / inlay_session_chat."""
    items = [_message(i, m) for i, m in enumerate(messages)]
    array = (_capi.ChatMessage * len(items))(*items) if items else None
    params = _capi.ChatParams()
    lib.inlay_chat_params_init_size(ctypes.byref(params), ctypes.sizeof(params))
    params.thinking = _thinking(thinking)
    params.add_generation_prompt = bool(add_generation_prompt)
    if template is not None:
        params.chat_template = to_cstr(template, "template")
    return array, len(items), params
