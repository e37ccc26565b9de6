#!/usr/bin/env python3
"""Compares the kernel entries of two builds of one source by name (pullsplit: the push kernels of twoshot_sentinel.cu
must be unchanged by the pull kernels added beside them).

usage: ptx-entries.py A B [NAME_PREFIX] [--same-symbol FROM=TO ...]
A and B are both PTX files (nvcc -ptx) or both cubins (nvcc -cubin). PTX: per .entry name present in both
(optionally only names starting with NAME_PREFIX), whether the function text (`.visible .entry NAME(` to its closing
`}` line) is byte-identical, after replacing FROM by TO in B's text for each --same-symbol (a symbol whose mangled
name changed with the template's signature; every replacement is counted and printed). Cubin: whether the machine
code (the ELF section .text.NAME) is byte-identical. Then the names only one file has. Exit 1 when a common entry
differs."""
import re
import struct
import sys


def ptx_entries(path):
    text = open(path).read()
    out = {}
    for m in re.finditer(r"^\.visible \.entry (\w+)\(", text, re.M):
        end = text.index("\n}\n", m.start()) + 3
        out[m.group(1)] = text[m.start():end]
    return out


def cubin_entries(path):
    data = open(path, "rb").read()
    assert data[:4] == b"\x7fELF" and data[4] == 2, f"{path}: not an ELF64 file"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = sections[shstrndx]
    out = {}
    for s in sections:
        start = names[4] + s[0]
        name = data[start:data.index(b"\0", start)].decode()
        if name.startswith(".text."):
            out[name[len(".text."):]] = data[s[4]:s[4] + s[5]]
    return out


args = [a for a in sys.argv[1:] if not a.startswith("--same-symbol")]
renames = [a.split("=", 1)[1].split("=", 1) for a in sys.argv[1:] if a.startswith("--same-symbol=")]
if len(args) < 2:
    sys.exit(__doc__)
cubin = args[0].endswith(".cubin")
load = cubin_entries if cubin else ptx_entries
a, b = load(args[0]), load(args[1])
prefix = args[2] if len(args) > 2 else ""
bad = 0
for name in sorted(set(a) & set(b)):
    if not name.startswith(prefix):
        continue
    x, y = a[name], b[name]
    note = ""
    if not cubin:
        for src, dst in renames:
            note += f", {y.count(src)} x {src} -> {dst}"
            y = y.replace(src, dst)
    same = x == y
    bad += not same
    print(f"{'identical' if same else 'DIFFERENT'} {name} ({len(x)} / {len(y)} bytes{note})")
for name in sorted(set(a) ^ set(b)):
    if name.startswith(prefix):
        print(f"only in {'A' if name in a else 'B'}: {name} ({len((a if name in a else b)[name])} bytes)")
sys.exit(1 if bad else 0)
