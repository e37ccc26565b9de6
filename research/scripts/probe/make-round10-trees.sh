#!/usr/bin/env bash
# Round 10 of the signature A/B (issue 18; research/notes/signature-cost.md, round 10): two trees derived from round
# 9's ab/duse (make-round9-trees.sh first), A/B builds only (they check nothing):
#   ab/dafter  duse's two packet loads issued after the sends (where the deferred check stands) instead of at the
#              kernel's start, their difference stored after the last barrier: nothing of the check before the sends
#   ab/dusecg  duse with the two loads weak and L2-only (ld.global.cg) instead of ld.relaxed.sys
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
test -d ab/duse || { echo "ab/duse missing: run research/scripts/probe/make-round9-trees.sh first" >&2; exit 2; }
for t in dafter dusecg; do rm -rf "ab/$t" && cp -a ab/duse "ab/$t"; done
python3 - <<'PY'
def edit(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) == count, (path, old[:60], s.count(old))
    open(path, 'w').write(s.replace(old, new))
loads = '''  if (k + 1 < p.nranks && ch.prev != 0) {
    const llc_u32 slot = ch.prev & LLCOMM_SIG_EPOCH_MASK;
    llcLoadRelaxedSysV2u64(llcSignatureSlot(p.scratch[me], ch.index, slot, llcSignaturePeer(me, p.nranks, k)),
                           x.peer.a, x.peer.b);
    llcLoadRelaxedSysV2u64(llcSignatureSlot(p.scratch[me], ch.index, slot, me), x.own.a, x.own.b);
  }
}'''
store = ('  if (k + 1 < p.nranks) llcStoreRelaxedSys(reinterpret_cast<llc_u32*>(llcSignatureSlot(p.scratch[me], ch.index, 0, '
         'LLCOMM_MAX_RANKS - 1)), static_cast<llc_u32>(differs | (differs >> 32)));\n')
sig = 'ab/dafter/llcomm/signature.cuh'
# dafter: no loads at the start; the loads at deferCheck; the difference stored in deferEnd.
edit(sig, loads, '}')
edit(sig, '  const llc_u64 differs = (x.own.a ^ x.peer.a) | (x.own.b ^ x.peer.b);\n' + store + '  return;\n',
     loads[:-2] + '  return;\n')
edit(sig, '''#else
  (void)p, (void)me, (void)ch, (void)x;
#endif
}''', '''#else
  const llc_u32 k = blockDim.x - 1 - threadIdx.x;
  const llc_u64 differs = (x.own.a ^ x.peer.a) | (x.own.b ^ x.peer.b);
''' + store + '''#endif
}''')
# dusecg: the two loads weak, cached in L2 only.
sig = 'ab/dusecg/llcomm/signature.cuh'
cg = loads.replace('llcLoadRelaxedSysV2u64(', 'llcLoadCgV2u64(')
edit(sig, loads, cg)
edit(sig, 'struct LlcSigPrev {', '''LLC_DEVICE void llcLoadCgV2u64(const void* p, llc_u64& a, llc_u64& b) {
  asm volatile("ld.global.cg.v2.u64 {%0,%1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
}
struct LlcSigPrev {''')
PY
for t in dafter dusecg; do
  for f in oneshot_ll oneshot_sentinel twoshot_sentinel; do
    spill=$(nvcc -arch=sm_90 -cubin -std=c++17 -Xptxas -v -I "ab/$t" "ab/$t/allreduce/$f.cu" -o /dev/null 2>&1 |
      grep -oE "[0-9]+ bytes stack frame" | awk '{s += $1} END {print s + 0}')
    echo "ab/$t $f: stack bytes over its kernels $spill"
  done
done
