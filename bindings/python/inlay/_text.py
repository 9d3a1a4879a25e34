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
