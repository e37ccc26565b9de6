# Dynamic SASS instruction counts per warp from an Nsight Compute source page (--page source --csv --print-source
# sass): the whole kernel, and up to the first 16-byte system-scope store that most warps execute (the first send).
# Usage: python3 sass-executed.py FILE.source.csv [...]
import csv
import sys

for f in sys.argv[1:]:
    rows = list(csv.reader(open(f)))
    hdr, data = rows[1], rows[2:]
    ie, src, ns = hdr.index("Instructions Executed"), hdr.index("Source"), hdr.index("# Samples")
    warps = max(int(r[ie] or 0) for r in data[:4])  # the entry instructions run once a warp
    total = sum(int(r[ie] or 0) for r in data)
    samples = sum(int(r[ns] or 0) for r in data)
    before, first = 0, None
    for i, r in enumerate(data):
        n = int(r[ie] or 0)
        if first is None and "STG.E.128.STRONG.SYS" in r[src] and n >= 0.5 * warps:
            first = i
            break
        before += n
    print(f"{f.split('/')[-1]}: warps {warps}, instructions a warp {total / warps:.0f}, "
          f"before the first send {before / warps:.0f} (index {first}), samples {samples}")
