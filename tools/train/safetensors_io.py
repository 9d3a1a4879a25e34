"""Minimal safetensors writer and reader (float32/float16/bfloat16 tensors).

Format: u64 little-endian header length N, N bytes of JSON
{"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ..., "__metadata__": {...}},
then the raw little-endian tensor bytes; offsets are relative to the end of the header.
Written by hand because Debian 12 packages no python3-safetensors.
"""

import json
import struct
import sys

import torch

_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}
_TORCH = {v: k for k, v in _DTYPES.items()}
_ALIGN = 8


def _tensor_bytes(t):
    t = t.detach().contiguous().cpu()
    # bfloat16 has no numpy dtype: reinterpret as int16 to get at the bytes.
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    if sys.byteorder != "little":
        raise RuntimeError("safetensors data is little-endian; this writer assumes a little-endian host")
    return t.numpy().tobytes()


def save(tensors, path, metadata=None):
    """Writes {name: tensor} sorted by name (as the reference implementation does)."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name]
        if t.dtype not in _DTYPES:
            raise ValueError(f"{name}: unsupported dtype {t.dtype}")
        data = _tensor_bytes(t)
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    # Pad the header with spaces so the data starts 8-byte aligned (allowed by the spec).
    text += b" " * ((-(8 + len(text))) % _ALIGN)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def load(path):
    """Reads every tensor back as a torch tensor (copies); returns (tensors, metadata)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    base = 8 + n
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = _TORCH[info["dtype"]]
        buf = bytearray(raw[base + begin:base + end])
        if dtype == torch.bfloat16:
            t = torch.frombuffer(buf, dtype=torch.int16).view(torch.bfloat16)
        else:
            t = torch.frombuffer(buf, dtype=dtype)
        tensors[name] = t.reshape(info["shape"]).clone()
    return tensors, metadata
