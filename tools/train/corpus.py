"""The training corpus: every fortune from Debian's `fortunes` and `fortunes-min` packages.

Fortune files are plain text with one '%' line between entries. Some entries use the
old "overstrike" trick (char, backspace, char) for bold/underline; the backspaces are
resolved to the final character. ascii-art is left out (pictures, not prose) and so is
anything the offensive `fortunes-off` package would install (it is never read).
"""

import hashlib
import os

FORTUNE_DIR = "/usr/share/games/fortunes"
EXCLUDED_FILES = {"ascii-art"}
# Fraction of fortunes held out for validation, chosen by a hash of the text so the
# split does not depend on file order or on the training seed.
VALIDATION_PERCENT = 5


def fortune_files(directory=FORTUNE_DIR):
    names = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name.endswith(".dat") or name.endswith(".u8") or name in EXCLUDED_FILES:
            continue
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        names.append(name)
    return names


def resolve_overstrike(text):
    out = []
    for ch in text:
        if ch == "\b":
            if out:
                out.pop()
        else:
            out.append(ch)
    return "".join(out)


def clean(entry):
    entry = resolve_overstrike(entry)
    # Keep newlines and tabs (attribution lines are tab-indented); drop other controls.
    entry = "".join(ch for ch in entry if ch in "\n\t" or ord(ch) >= 32 and ord(ch) != 127)
    lines = [line.rstrip() for line in entry.split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def read_fortunes(directory=FORTUNE_DIR):
    """Returns [(file_name, text)] in file order; texts are cleaned and non-empty."""
    result = []
    for name in fortune_files(directory):
        with open(os.path.join(directory, name), "rb") as f:
            raw = f.read().decode("utf-8", errors="replace")
        entry_lines = []
        for line in raw.split("\n") + ["%"]:
            if line == "%":
                text = clean("\n".join(entry_lines))
                if text:
                    result.append((name, text))
                entry_lines = []
            else:
                entry_lines.append(line)
    return result


def is_validation(text):
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "little") % 100 < VALIDATION_PERCENT


def split(fortunes):
    """Deduplicates texts (first occurrence wins) and splits them into (train, validation)."""
    seen = set()
    train, val = [], []
    for _, text in fortunes:
        if text in seen:
            continue
        seen.add(text)
        (val if is_validation(text) else train).append(text)
    return train, val
