#!/usr/bin/env python3
"""Writes nfc_vectors.json: [input, NFC(input)] pairs computed by Python's
unicodedata.normalize, the reference for lib/tokenizer/unicode_nfc.cpp. Inputs: every
code point with a canonical decomposition, given decomposed (NFD) and as itself; Hangul
syllables decomposed; and seeded random strings of starters and combining marks in
random order (reordering, blocking, composition exclusions, singletons)."""
import json
import random
import sys
import unicodedata

rng = random.Random(20240611)
pairs = []
decomposable = []
marks = []
for cp in range(0x110000):
    if 0xD800 <= cp <= 0xDFFF:
        continue
    c = chr(cp)
    d = unicodedata.decomposition(c)
    if d and not d.startswith('<'):
        decomposable.append(c)
    if unicodedata.combining(c):
        marks.append(c)
for c in decomposable:
    pairs.append(unicodedata.normalize('NFD', c))
    pairs.append(c)
for cp in range(0xAC00, 0xD7A4, 97):
    pairs.append(unicodedata.normalize('NFD', chr(cp)))
    pairs.append(unicodedata.normalize('NFD', chr(cp)) + '\u0301')
bases = [c for c in 'aeiouAEIOUnNcCsSzZyYwW'] + ['\u03b1', '\u03c9', '\u0438', '\u1100', '\u1161', '\u11a8', '\u0915',
                                                    '\u05d0', '\u3042', '\u0d4a', '\u0b47', ' ', '\u00e9']
for _ in range(3000):
    s = ''
    for _ in range(rng.randint(1, 4)):
        s += rng.choice(bases + decomposable[:400])
        for _ in range(rng.randint(0, 3)):
            s += rng.choice(marks + ['\u0301', '\u0300', '\u0308', '\u0323', '\u0327', '\u0328', '\u031b', '\u0345'])
    pairs.append(s)
out = [[s, unicodedata.normalize('NFC', s)] for s in pairs]
with open('nfc_vectors.json', 'w', encoding='utf-8') as f:
    json.dump({'unicode_version': unicodedata.unidata_version, 'python': sys.version.split()[0], 'cases': out}, f,
              ensure_ascii=False, separators=(',', ':'))
print(len(out), 'cases')
