#!/usr/bin/env bash
# The prologue ladder (prologue.cu) built against several kernel trees and run in interleaved rounds, so that the
# rung rows (the same code in every binary) are the control and the real-kernel rows show each tree's effect.
#   OUT=/tmp/pro bash scripts/probe/prologue/run.sh ROUNDS label=dir [label=dir ...]
# Prints the median over rounds of each row, per tree; raw outputs in $OUT/prologue/.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-prologue}/prologue
mkdir -p "$out"
rounds=$1; shift
labels=()
for v in "$@"; do
  label=${v%%=*} dir=${v#*=}
  labels+=("$label")
  nvcc -arch=sm_90 -std=c++17 -O3 -I "$dir" scripts/probe/prologue/prologue.cu -o "$out/prologue-$label"
done
for ((r = 1; r <= rounds; r++)); do
  for label in "${labels[@]}"; do timeout 60 "$out/prologue-$label" 5 > "$out/$label-r$r.txt" || echo "$label round $r: exit $?"; done
done
python3 - "$out" "${labels[@]}" <<'PY'
import sys, re, statistics, collections
out, labels = sys.argv[1], sys.argv[2:]
import glob
rows = collections.OrderedDict()
for label in labels:
    for f in sorted(glob.glob(f"{out}/{label}-r*.txt")):
        for line in open(f):
            m = re.match(r"^(.*?)\s+(\d+\.\d+)(\s+[+-]\d+\.\d+)?\s*$", line)
            if m and not line.startswith("#") and not line.startswith("rung"):
                rows.setdefault(m.group(1).strip(), {}).setdefault(label, []).append(float(m.group(2)))
print("row".ljust(48) + "".join(l.rjust(10) for l in labels))
for name, v in rows.items():
    print(name.ljust(48) + "".join((f"{statistics.median(v[l]):.3f}" if l in v else "-").rjust(10) for l in labels))
PY
