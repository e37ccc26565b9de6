#!/usr/bin/env python3
"""Records a small PyTorch-profiler Chrome trace of a Llama-style decoder's decode steps, for `llcomm diagnose`.

Random weights, real structure: RMSNorm, QKV projection, attention over a KV cache, output projection, AllReduce,
RMSNorm, gated MLP, AllReduce, per layer; then the LM head. Every tensor-parallel AllReduce appears as a
`record_param_comms` op (collective name, element count, dtype, group size) and, where NCCL launches one, as an NCCL
kernel.

--tp 1 (default): torch.distributed at world_size=1 on the NCCL backend. NCCL's one-rank path does nothing for an
in-place sum, so the AllReduces use ReduceOp.AVG (a pre-multiplied sum: NCCL launches a kernel even for one rank);
at world_size=1 the result equals the input either way.
--tp N: N processes, one GPU each (cuda:0..N-1), Megatron-style shards: each rank holds heads/N query heads,
kv_heads/N KV heads and intermediate/N MLP columns; the attention output and MLP down projections are row-parallel,
so each ends in a SUM AllReduce of the full hidden vector over NVLink. The embedding and the LM head are replicated
(a vocab-parallel LM head would add an all-gather). Every rank writes its own trace: rank 0 at --out, rank r at
--out with ".rank<r>" before the extension.

Also measures what the decode cost model needs from this GPU: the bandwidth a batch-1 GEMV (bf16 weight read)
reaches, written to hbm.json beside the trace.

Usage: python3 scripts/record-torch-trace.py --out OUT/trace.json [--layers 8] [--steps 3] [--tp 2]
"""
import argparse
import gzip
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F


# ReduceOp.AVG unless this NCCL refuses it (then SUM; see the module docstring).
AR_OP = dist.ReduceOp.AVG


def rms_norm(x, weight, eps=1e-5):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps).to(x.dtype) * weight


class DecoderLayer:
    """One rank's shard of a decoder layer at tensor-parallel degree tp (tp=1: the whole layer)."""

    def __init__(self, hidden, heads, kv_heads, intermediate, max_context, device, dtype, tp=1):
        self.head_dim = hidden // heads
        heads, kv_heads, intermediate = heads // tp, kv_heads // tp, intermediate // tp
        self.hidden, self.heads, self.kv_heads = hidden, heads, kv_heads
        std = hidden ** -0.5
        mk = lambda *shape: (torch.randn(*shape, device=device, dtype=dtype) * std)
        self.w_qkv = mk((heads + 2 * kv_heads) * self.head_dim, hidden)
        self.w_o = mk(hidden, heads * self.head_dim)
        self.w_gate_up = mk(2 * intermediate, hidden)
        self.w_down = mk(hidden, intermediate)
        self.norm1 = torch.ones(hidden, device=device, dtype=dtype)
        self.norm2 = torch.ones(hidden, device=device, dtype=dtype)
        self.k_cache = torch.randn(1, kv_heads, max_context, self.head_dim, device=device, dtype=dtype)
        self.v_cache = torch.randn(1, kv_heads, max_context, self.head_dim, device=device, dtype=dtype)

    def forward(self, x, pos):
        b = x.shape[0]
        h = rms_norm(x, self.norm1)
        qkv = F.linear(h, self.w_qkv)
        q, k, v = qkv.split([self.heads * self.head_dim, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim], -1)
        q = q.view(b, self.heads, 1, self.head_dim)
        self.k_cache[:, :, pos] = k.view(b, self.kv_heads, self.head_dim)
        self.v_cache[:, :, pos] = v.view(b, self.kv_heads, self.head_dim)
        keys = self.k_cache[:, :, : pos + 1].repeat_interleave(self.heads // self.kv_heads, dim=1)
        values = self.v_cache[:, :, : pos + 1].repeat_interleave(self.heads // self.kv_heads, dim=1)
        attn = F.scaled_dot_product_attention(q, keys, values)
        out = F.linear(attn.reshape(b, -1), self.w_o)
        dist.all_reduce(out, op=AR_OP)  # tensor-parallel AllReduce after attention
        x = x + out
        h = rms_norm(x, self.norm2)
        gate, up = F.linear(h, self.w_gate_up).chunk(2, -1)
        out = F.linear(F.silu(gate) * up, self.w_down)
        dist.all_reduce(out, op=AR_OP)  # tensor-parallel AllReduce after the MLP
        return x + out


def gemv_bandwidth(device, dtype, rows=16384, cols=8192, iters=50):
    """Achieved read bandwidth of a batch-1 GEMV over a bf16 weight that does not fit in L2."""
    w = torch.randn(rows, cols, device=device, dtype=dtype)
    x = torch.randn(1, cols, device=device, dtype=dtype)
    for _ in range(5):
        F.linear(x, w)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        F.linear(x, w)
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3 / iters
    weight_bytes = w.numel() * w.element_size()
    return {'rows': rows, 'cols': cols, 'dtype': str(dtype), 'weightBytes': weight_bytes,
            'timeUs': seconds * 1e6, 'achievedGBs': weight_bytes / seconds / 1e9}


def nccl_version():
    v = torch.cuda.nccl.version()
    return '.'.join(map(str, v)) if isinstance(v, (tuple, list)) else str(v)


def main():
    args = parse_args()
    if args.tp == 1:
        record(0, args)
    else:
        import torch.multiprocessing as mp
        if torch.cuda.device_count() < args.tp:
            raise SystemExit(f'--tp {args.tp} needs {args.tp} GPUs, this machine has {torch.cuda.device_count()}')
        mp.spawn(record, args=(args,), nprocs=args.tp, join=True)


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', required=True)
    ap.add_argument('--layers', type=int, default=8)
    ap.add_argument('--hidden', type=int, default=2048)
    ap.add_argument('--heads', type=int, default=16)
    ap.add_argument('--kv-heads', type=int, default=4)
    ap.add_argument('--intermediate', type=int, default=5632)
    ap.add_argument('--vocab', type=int, default=32000)
    ap.add_argument('--context', type=int, default=512)
    ap.add_argument('--steps', type=int, default=3)
    ap.add_argument('--tp', type=int, default=1, help='tensor-parallel degree: processes, one GPU each')
    args = ap.parse_args()
    for name in ('heads', 'kv_heads', 'intermediate'):
        if getattr(args, name) % args.tp:
            ap.error(f'--{name.replace("_", "-")} {getattr(args, name)} is not divisible by --tp {args.tp}')
    return args


def rank_path(out, rank):
    """Rank 0 writes to out itself; rank r to out with '.rank<r>' before the extension."""
    if rank == 0:
        return out
    root, ext = os.path.splitext(out)
    return f'{root}.rank{rank}{ext}'


def record(rank, args):
    os.environ.setdefault('NCCL_NVLS_ENABLE', '0')  # never NVLink multicast on shared machines
    os.environ.setdefault('MASTER_ADDR', '127.0.0.1')
    os.environ.setdefault('MASTER_PORT', '29533')
    device = torch.device('cuda', rank)
    torch.cuda.set_device(device)
    dist.init_process_group('nccl', rank=rank, world_size=args.tp, device_id=device)
    dtype = torch.bfloat16
    torch.manual_seed(rank)  # each rank's own shard; the replicated embedding and LM head are only shapes here
    global AR_OP
    if args.tp > 1:
        AR_OP = dist.ReduceOp.SUM  # a real sum over the shards
    else:
        try:
            probe = torch.ones(8, device=device, dtype=dtype)
            dist.all_reduce(probe, op=AR_OP)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - any failure of AVG means: use SUM
            print(f'all_reduce AVG failed ({e}); using SUM')
            AR_OP = dist.ReduceOp.SUM

    layers = [DecoderLayer(args.hidden, args.heads, args.kv_heads, args.intermediate, args.context + args.steps + 8,
                           device, dtype, args.tp) for _ in range(args.layers)]
    torch.manual_seed(0)  # the replicated weights are the same on every rank
    embed = torch.randn(args.vocab, args.hidden, device=device, dtype=dtype) * 0.02
    lm_head = torch.randn(args.vocab, args.hidden, device=device, dtype=dtype) * args.hidden ** -0.5
    final_norm = torch.ones(args.hidden, device=device, dtype=dtype)

    def decode_step(token, pos):
        x = embed[token]
        for layer in layers:
            x = layer.forward(x, pos)
        logits = F.linear(rms_norm(x, final_norm), lm_head)
        return logits.argmax(-1)

    token = torch.zeros(1, dtype=torch.long, device=device)
    with torch.no_grad():
        for i in range(3):  # warm-up: NCCL communicator creation, cuBLAS handles, allocator
            token = decode_step(token, args.context - 8 + i)
        torch.cuda.synchronize()
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
            for step in range(args.steps):
                with torch.profiler.record_function(f'decode_step_{step}'):
                    token = decode_step(token, args.context + step)
            torch.cuda.synchronize()
        hbm = gemv_bandwidth(device, dtype) if rank == 0 else None

    out = rank_path(args.out, rank)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    prof.export_chrome_trace(out)
    size = os.path.getsize(out)
    if size > 2_000_000:
        with open(out, 'rb') as f, gzip.open(out + '.gz', 'wb', compresslevel=9) as g:
            g.write(f.read())
        os.remove(out)
        out += '.gz'
    props = torch.cuda.get_device_properties(device)
    meta = {'device': props.name, 'torch': torch.__version__, 'nccl': nccl_version(),
            'date': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()), 'args': vars(args), 'rank': rank,
            'gemv': hbm, 'trace': os.path.basename(out), 'traceBytes': os.path.getsize(out)}
    if rank == 0:
        with open(os.path.join(os.path.dirname(os.path.abspath(out)), 'hbm.json'), 'w') as f:
            json.dump(meta, f, indent=2)
    opener = gzip.open if out.endswith('.gz') else open
    with opener(out, 'rt') as f:
        events = json.load(f).get('traceEvents', [])
    kernels = {}
    for e in events:
        if e.get('cat') == 'kernel':
            name = e['name'][:60]
            kernels[name] = kernels.get(name, 0) + 1
    comms = sum(1 for e in events if e.get('name') == 'record_param_comms')
    print(json.dumps(meta, indent=2))
    print(f'events {len(events)}, record_param_comms {comms}, kernel names:')
    for name, n in sorted(kernels.items(), key=lambda kv: -kv[1]):
        print(f'  {n:5d}  {name}')
    dist.destroy_process_group()


if __name__ == '__main__':
    main()
