#!/usr/bin/env bash
# Issue 22 probe (2026-12-02): L2 traffic and duration of single AllReduce kernels under Nsight Compute, to tell
# whether twoshot-sentinel at 8 ranks / 1 MB and the 16-32-rank cases are bound by bytes (and how many of them are
# polls and re-arms) or by latency. Virtual ranks of GPU 0 share one launch, so ncu's serialization cannot deadlock
# them. Clocks left alone (--clock-control none, as the device notes ask). Each case: llcomm bench with a few
# iterations; ncu profiles NCU_COUNT launches of the named kernel after NCU_SKIP. Output: $OUT/ncu-<case>.csv and a
# table (sectors are 32 B).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-ncu}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
metrics=gpu__time_duration.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum,lts__t_requests_op_read.sum,lts__t_requests_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,sm__cycles_active.avg
# name ranks algorithm size buffer kernel-regex
cases=(
  "ts-8r-1M-bb4M 8 twoshot-sentinel 1M 4M twoshot_sentinel"
  "ts-8r-1M-bb1M 8 twoshot-sentinel 1M 1M twoshot_sentinel"
  "ob-8r-1M 8 oneshot-barrier 1M 1M oneshot_barrier"
  "ts-8r-256K 8 twoshot-sentinel 256K 1M twoshot_sentinel"
  "ob-8r-256K 8 oneshot-barrier 256K 1M oneshot_barrier"
  "os-16r-8K 16 oneshot-sentinel 8K 1M oneshot_sentinel"
  "ol-16r-8K 16 oneshot-ll 8K 1M oneshot_ll"
  "ts-16r-8K 16 twoshot-sentinel 8K 1M twoshot_sentinel"
  "ob-16r-8K 16 oneshot-barrier 8K 1M oneshot_barrier"
  "ts-16r-64K 16 twoshot-sentinel 64K 1M twoshot_sentinel"
  "ob-16r-64K 16 oneshot-barrier 64K 1M oneshot_barrier"
  "ts-32r-8K 32 twoshot-sentinel 8K 1M twoshot_sentinel"
  "ob-32r-8K 32 oneshot-barrier 8K 1M oneshot_barrier"
)
t0=$(date +%s)
for c in "${cases[@]}"; do
  read -r name n alg size bb kre <<<"$c"
  if [ $(( $(date +%s) - t0 )) -gt "${NCU_BUDGET_S:-240}" ]; then echo "budget: $name not run"; continue; fi
  devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
  timeout 90 ncu --clock-control none --csv --metrics "$metrics" -k "regex:$kre" \
    --launch-skip "${NCU_SKIP:-10}" --launch-count "${NCU_COUNT:-3}" \
    node packages/tools/bin/llcomm.js bench --no-progress --devices "$devs" --algorithms "$alg" --dtype bf16 \
    --sizes "$size" --buffer-bytes "$bb" --iters 20 --warmup 5 > "$out/ncu-$name.csv" 2> "$out/ncu-$name.err"
  echo "$name: rc $? at $(( $(date +%s) - t0 )) s"
done
python3 - "$out" "${cases[@]}" <<'PY'
import csv, sys, os, statistics
out = sys.argv[1]
print(f"{'case':16} {'us':>7} {'rd MB':>8} {'wr MB':>8} {'atom':>6} {'red':>6} {'rd req':>9} {'wr req':>9} {'dram r':>7} {'dram w':>7} {'inst M':>8}")
for c in sys.argv[2:]:
    name = c.split()[0]
    path = f"{out}/ncu-{name}.csv"
    if not os.path.exists(path): continue
    lines = [l for l in open(path) if l.startswith('"')]
    if not lines: print(f"{name:16} no rows (see ncu-{name}.err)"); continue
    vals = {}
    for row in csv.DictReader(lines):
        m = row.get("Metric Name"); v = row.get("Metric Value", "").replace(",", "")
        try: vals.setdefault(m, []).append((row.get("Metric Unit"), float(v)))
        except ValueError: pass
    def g(m, scale=1.0):
        if m not in vals: return float("nan")
        unit = vals[m][0][0]; x = statistics.median(v for _, v in vals[m])
        mult = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "msecond": 1e3, "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(unit, 1.0)
        return x * mult * scale
    sec = 32 / 1e6
    print(f"{name:16} {g('gpu__time_duration.sum'):7.2f} {g('lts__t_sectors_op_read.sum', sec):8.2f} {g('lts__t_sectors_op_write.sum', sec):8.2f} "
          f"{g('lts__t_sectors_op_atom.sum', sec):6.2f} {g('lts__t_sectors_op_red.sum', sec):6.2f} {g('lts__t_requests_op_read.sum', 1e-6):9.3f} "
          f"{g('lts__t_requests_op_write.sum', 1e-6):9.3f} {g('dram__bytes_read.sum', 1e-6):7.2f} {g('dram__bytes_write.sum', 1e-6):7.2f} {g('smsp__inst_executed.sum', 1e-6):8.2f}")
PY
