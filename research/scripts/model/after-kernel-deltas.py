#!/usr/bin/env python3
"""What a call costs more after a kernel than back to back, per algorithm and PDL setting: median with --compute-us
minus median without, per size, and the mean over sizes (data/models/gpus.json allReduceAfterKernelUs, PDL off).
Usage: python3 scripts/model/after-kernel-deltas.py WITH_COMPUTE.json BACK_TO_BACK.json"""
import json,statistics,sys
a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
key=lambda r:(r['algorithm'],r['bytes'],r.get('pdl'))
B={key(r):r['medianUs'] for r in b['rows']}
for pdl in [False,True]:
  for al in sorted(set(r['algorithm'] for r in a['rows'])):
    ds=[r['medianUs']-B[key(r)] for r in a['rows'] if r['algorithm']==al and r.get('pdl')==pdl]
    print(f"pdl {'on ' if pdl else 'off'} {al:18s}", ' '.join(f"{x:+.2f}" for x in ds), f"mean {statistics.mean(ds):+.2f}")
