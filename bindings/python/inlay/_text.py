"""Strings into C: UTF-8 bytes. bytes are passed as they are (the library checks them:
INVALID_UTF8); str is encoded, and NUL-terminated parameters refuse an embedded NUL,
which C would take as the end of the string."""
from .errors import InvalidUtf8Error, Status, invalid_argument


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
