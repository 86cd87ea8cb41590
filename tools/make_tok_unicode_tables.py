#!/usr/bin/env python3
"""make_tok_unicode_tables.py — writes core/tokenizer/tok_unicode_data.c: where the Unicode data
of HF `tokenizers` differs from the libraries we run (utf8proc, PCRE2).

1. Normalization. HF normalizes with the `unicode-normalization-alignments` crate,
   whose tables are older (Unicode 9.0) than utf8proc's. Unicode's stability policy
   freezes a character's combining class and canonical decomposition once assigned,
   so the only differences are characters assigned later, which the crate treats as
   unassigned (class 0, no decomposition, never composed). We ask utf8proc (ctypes)
   for every code point with a nonzero class or a canonical decomposition and ask
   `tokenizers` (NFD/NFC normalizers) whether it knows that property: tok_nfc_unknown
   lists those it does not.
2. Regex classes. HF runs Split/ByteLevel patterns with Oniguruma, whose Unicode is
   newer than this PCRE2's. For every general category we compute the code points in
   Oniguruma's \\p{X} (a `tokenizers` Split pre-tokenizer on a string of all code
   points) and in PCRE2's \\p{X} (ctypes), and store the differences as ranges:
   tok_split.c adds the "plus" ranges to \\p{X} and refuses a property with "minus"
   ranges in a pattern.
Deterministic; prints what it wrote. Takes about a minute.
Run: .venv/bin/python tools/make_tok_unicode_tables.py
"""
import ctypes
import ctypes.util
import shutil
import subprocess
import sys
from pathlib import Path

import tokenizers
from tokenizers import Regex, normalizers, pre_tokenizers

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "core" / "tok_unicode_data.c"
PROPS = ["L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No",
         "P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So",
         "Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf", "Co", "Cn"]

u8p = ctypes.CDLL(ctypes.util.find_library("utf8proc") or "libutf8proc.so.2")
pc = ctypes.CDLL(ctypes.util.find_library("pcre2-8") or "libpcre2-8.so.0")


class Prop(ctypes.Structure):  # utf8proc_property_t, leading fields only
    _fields_ = [("category", ctypes.c_int16), ("combining_class", ctypes.c_int16),
                ("bidi_class", ctypes.c_int16), ("decomp_type", ctypes.c_int16),
                ("decomp_seqindex", ctypes.c_uint16)]


u8p.utf8proc_get_property.restype = ctypes.POINTER(Prop)
u8p.utf8proc_get_property.argtypes = [ctypes.c_int32]
u8p.utf8proc_unicode_version.restype = ctypes.c_char_p
pc.pcre2_compile_8.restype = ctypes.c_void_p
pc.pcre2_compile_8.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32,
                               ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_size_t),
                               ctypes.c_void_p]
pc.pcre2_match_data_create_8.restype = ctypes.c_void_p
pc.pcre2_match_data_create_8.argtypes = [ctypes.c_uint32, ctypes.c_void_p]
pc.pcre2_match_8.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t,
                             ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p]
pc.pcre2_get_ovector_pointer_8.restype = ctypes.POINTER(ctypes.c_size_t)
pc.pcre2_get_ovector_pointer_8.argtypes = [ctypes.c_void_p]
pc.pcre2_config_8.argtypes = [ctypes.c_uint32, ctypes.c_void_p]
PCRE2_UTF, PCRE2_UCP, PCRE2_CONFIG_UNICODE_VERSION = 0x00080000, 0x00020000, 10

NFD, NFC = normalizers.NFD(), normalizers.NFC()
CPS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
TEXT = "".join(map(chr, CPS))
DATA = TEXT.encode()


def nfc_unknown():
    def knows_class(c):
        # 'a' c U+0334 (class 1) reorders only when c is a non-starter of class > 1;
        # 'a' c U+0301 composes to 'á' c only when c is a non-starter of class != 230.
        return (NFC.normalize_str("a" + c + "\u0334") != "a" + c + "\u0334" or
                NFC.normalize_str("a" + c + "\u0301") != "a" + c + "\u0301")
    out = []
    for cp in range(0x300, 0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        p = u8p.utf8proc_get_property(cp).contents
        has_dec = (p.decomp_seqindex != 0xFFFF and p.decomp_type == 0) or 0xAC00 <= cp <= 0xD7A3
        c = chr(cp)
        if has_dec and NFD.normalize_str(c) == c:
            out.append(cp)
        elif p.combining_class and not knows_class(c):
            out.append(cp)
    return out


def byte_to_char():
    b2c, o = {}, 0
    for i, c in enumerate(TEXT):
        b2c[o] = i
        o += len(c.encode())
    b2c[o] = len(TEXT)
    return b2c


def pcre_set(prop, b2c):
    e, eo = ctypes.c_int(), ctypes.c_size_t()
    pat = ("\\p{%s}+" % prop).encode()
    re = pc.pcre2_compile_8(pat, len(pat), PCRE2_UTF | PCRE2_UCP, ctypes.byref(e),
                            ctypes.byref(eo), None)
    md = pc.pcre2_match_data_create_8(1, None)
    s, start = set(), 0
    while pc.pcre2_match_8(re, DATA, len(DATA), start, 0, md, None) >= 0:
        ov = pc.pcre2_get_ovector_pointer_8(md)
        s.update(CPS[i] for i in range(b2c[ov[0]], b2c[ov[1]]))
        start = ov[1] if ov[1] > start else start + 1
    return s


def onig_set(prop):
    sp = pre_tokenizers.Split(Regex("\\P{%s}+" % prop), behavior="removed")
    s = set()
    for _, (a, b) in sp.pre_tokenize_str(TEXT):
        s.update(CPS[i] for i in range(a, b))
    return s


def ranges(xs):
    out = []
    for x in sorted(xs):
        if out and out[-1][1] == x - 1:
            out[-1][1] = x
        else:
            out.append([x, x])
    return out


def main():
    unknown = nfc_unknown()
    b2c = byte_to_char()
    ver = ctypes.create_string_buffer(32)
    pc.pcre2_config_8(PCRE2_CONFIG_UNICODE_VERSION, ver)
    props = []
    for p in PROPS:
        a, b = onig_set(p), pcre_set(p, b2c)
        props.append((p, ranges(a - b), ranges(b - a)))
        print(f"  \\p{{{p}}}: onig {len(a)}, pcre2 {len(b)}, plus {len(props[-1][1])} ranges, "
              f"minus {len(props[-1][2])} ranges", file=sys.stderr)
    L = ["/* tok_unicode_data.c - GENERATED by tools/make_tok_unicode_tables.py; do not edit.",
         f" * HF `tokenizers` {tokenizers.__version__} vs utf8proc "
         f"{u8p.utf8proc_unicode_version().decode()} (Unicode) and PCRE2 (Unicode "
         f"{ver.value.decode()}). */",
         '#include "tok_internal.h"', "",
         "/* Normalized by HF as unassigned (its tables predate them). Sorted. */",
         "const uint32_t tok_nfc_unknown[] = {"]
    for i in range(0, len(unknown), 8):
        L.append("    " + " ".join("0x%05X," % u for u in unknown[i:i + 8]))
    L += ["};", "const size_t tok_nfc_unknown_n = sizeof tok_nfc_unknown / "
          "sizeof tok_nfc_unknown[0];", ""]
    for p, plus, _ in props:
        if plus:
            L.append(f"static const uint32_t plus_{p}[] = {{")
            flat = [v for r in plus for v in r]
            for i in range(0, len(flat), 8):
                L.append("    " + " ".join("0x%05X," % v for v in flat[i:i + 8]))
            L.append("};")
    L += ["", "/* Oniguruma's \\p{X} = PCRE2's \\p{X} + plus ranges - (minus ranges). */",
          "const tok_uprop tok_uprops[] = {"]
    for p, plus, minus in props:
        arr = f"plus_{p}" if plus else "NULL"
        L.append(f'    {{"{p}", {arr}, {len(plus)}, {len(minus)}}},')
    L += ["};", "const size_t tok_uprops_n = sizeof tok_uprops / sizeof tok_uprops[0];", ""]
    OUT.write_text("\n".join(L))
    if shutil.which("clang-format"):
        subprocess.run(["clang-format", "-i", str(OUT)], check=True)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(unknown)} NFC code points, "
          f"{sum(len(x[1]) for x in props)} plus ranges", file=sys.stderr)


if __name__ == "__main__":
    main()
