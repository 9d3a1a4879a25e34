"""Strings into C: UTF-8 bytes. bytes are passed as they are (the library checks them:
INVALID_UTF8); str is encoded, and NUL-terminated parameters refuse an embedded NUL,
which C would take as the end of the string."""
from .errors import InvalidTokenError, InvalidUtf8Error, Status, invalid_argument


def to_bytes(value, what):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidUtf8Error(Status.INVALID_UTF8, "%s is not valid UTF-8: %s" % (what, e)) from None
    raise TypeError("%s must be str or bytes, not %s" % (what, type(value).__name__))


def to_cstr(value, what):
    data = to_bytes(value, what)
    if b"\0" in data:
        raise invalid_argument("%s contains a NUL character" % what)
    return data


def to_token_array(tokens):
    """(c_int32 array or None, count) for token ids. ctypes would wrap an id beyond
    int32 silently into another id, so such an id is refused here (INVALID_TOKEN)."""
    import ctypes
    ids = list(tokens)
    for i, t in enumerate(ids):
        if not isinstance(t, int) or isinstance(t, bool):
            raise TypeError("tokens[%d] must be an int, not %s" % (i, type(t).__name__))
        if not -2**31 <= t < 2**31:
            raise InvalidTokenError(Status.INVALID_TOKEN, "tokens[%d] = %d is not a token id" % (i, t))
    return ((ctypes.c_int32 * len(ids))(*ids) if ids else None), len(ids)


def tokenize_call(lib, fn, handle, text, add_bos, parse_special):
    """Token ids through inlay_tokenize or inlay_vocab_tokenize (`fn`), growing the
    buffer on BUFFER_TOO_SMALL."""
    import ctypes
    data = to_bytes(text, "text")
    flags = (1 if add_bos else 0) | (2 if parse_special else 0)
    n = ctypes.c_size_t(0)
    capacity = len(data) + 2
    while True:
        out = (ctypes.c_int32 * capacity)()
        status = fn(handle, data, len(data), flags, out, capacity, ctypes.byref(n))
        if status == Status.BUFFER_TOO_SMALL and n.value > capacity:
            capacity = n.value
            continue
        lib.check(status)
        return list(out[:n.value])


def detokenize_call(lib, fn, handle, tokens, render_special):
    """The text of `tokens` through inlay_detokenize or inlay_vocab_detokenize (`fn`)."""
    import ctypes
    array, n = to_token_array(tokens)
    length = ctypes.c_size_t(0)
    capacity = 16 * n + 1
    while True:
        out = ctypes.create_string_buffer(capacity)
        status = fn(handle, array, n, bool(render_special), out, capacity, ctypes.byref(length))
        if status == Status.BUFFER_TOO_SMALL and length.value + 1 > capacity:
            capacity = length.value + 1
            continue
        lib.check(status)
        return out.raw[:length.value].decode("utf-8")
