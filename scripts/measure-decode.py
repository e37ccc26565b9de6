#!/usr/bin/env python3
"""Measures the per-token decode time of one tensor-parallel shard of real model shapes on this GPU, without the
AllReduce, for the decode cost model's compute/launch term (issue 6).

A shard of TP degree t holds heads/t query heads, max(1, kv_heads/t) KV heads, intermediate/t of the MLP and vocab/t
of the LM head, with random bf16 weights. One decode step is: per layer RMSNorm, QKV projection, KV-cache write,
attention over the cache (SDPA), output projection, residual add, RMSNorm, gated MLP, residual add; then the LM head.
The AllReduces a real TP run does after the attention and MLP outputs are left out on purpose: the decode model adds
them per algorithm from bench/results.

Each configuration is timed twice, with CUDA events over back-to-back steps:
  eager: Python issues every kernel (a framework's per-kernel launch cost is in the figure);
  graph: the step captured once in a CUDA graph and replayed (launch cost mostly gone).
Also counted: the kernels in one step (from the profiler) and the bytes a step must read (weights + KV cache), so the
model can split the time into an HBM term and a per-kernel term.

Usage: python3 scripts/measure-decode.py --out OUT/decode-shards.json

--tp-real N (N GPUs): N processes, one GPU each, each holding its shard, and the step run twice: as above (no
AllReduce) and with the two AllReduces per layer a tensor-parallel run does (torch.distributed, NCCL over NVLink, SUM
of the attention and MLP outputs before each residual add), both eager and captured in one CUDA graph with the NCCL
calls inside. The difference is what AllReduce costs inside a real decode step, to set beside the decode model's
comm term (bench figure × AllReduces per token).
  python3 scripts/measure-decode.py --tp-real 2 --out OUT/decode-tp2.json
"""
import argparse
import json
import os
import time

import torch
import torch.nn.functional as F

# name, layers, hidden, heads, kv_heads, intermediate, vocab (the same figures as data/models/models.json)
MODELS = {
    'llama-3.1-8b': (32, 4096, 32, 8, 14336, 128256),
    'llama-3.1-70b': (80, 8192, 64, 8, 28672, 128256),
}
# (model, tp, batch, context): shards that fit one H200 (70B at TP=2 would need 70 GB of weights: fine; TP=1 not)
CONFIGS = [
    ('llama-3.1-8b', 1, 1, 1024), ('llama-3.1-8b', 1, 1, 8192), ('llama-3.1-8b', 1, 16, 1024),
    ('llama-3.1-8b', 2, 1, 1024), ('llama-3.1-8b', 4, 1, 1024), ('llama-3.1-8b', 8, 1, 1024),
    ('llama-3.1-70b', 2, 1, 1024), ('llama-3.1-70b', 4, 1, 1024), ('llama-3.1-70b', 8, 1, 1024),
    ('llama-3.1-70b', 4, 16, 1024), ('llama-3.1-70b', 8, 16, 4096),
]


def rms_norm(x, weight, eps=1e-5):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps).to(x.dtype) * weight


class Shard:
    def __init__(self, model, tp, batch, context, device, dtype):
        layers, hidden, heads, kv_heads, inter, vocab = MODELS[model]
        self.head_dim = hidden // heads
        self.heads, self.kv_heads = heads // tp, max(1, kv_heads // tp)
        self.inter, self.vocab = inter // tp, vocab // tp
        self.batch, self.context, self.hidden = batch, context, hidden
        std = hidden ** -0.5
        mk = lambda *shape: torch.randn(*shape, device=device, dtype=dtype) * std
        hd = self.head_dim
        self.layers = []
        for _ in range(layers):
            self.layers.append({
                'qkv': mk((self.heads + 2 * self.kv_heads) * hd, hidden), 'o': mk(hidden, self.heads * hd),
                'gate_up': mk(2 * self.inter, hidden), 'down': mk(hidden, self.inter),
                'n1': torch.ones(hidden, device=device, dtype=dtype), 'n2': torch.ones(hidden, device=device, dtype=dtype),
                'k': torch.randn(batch, self.kv_heads, context + 1, hd, device=device, dtype=dtype),
                'v': torch.randn(batch, self.kv_heads, context + 1, hd, device=device, dtype=dtype),
            })
        self.lm_head = mk(self.vocab, hidden)
        self.final_norm = torch.ones(hidden, device=device, dtype=dtype)
        self.x = torch.randn(batch, hidden, device=device, dtype=dtype)
        el = torch.tensor([], dtype=dtype).element_size()
        weights = sum(t.numel() for L in self.layers for key, t in L.items() if key not in ('k', 'v'))
        weights += self.lm_head.numel() + hidden
        self.weight_bytes = weights * el
        # The step reads context+1 positions of K and V per layer (the new one written, then read).
        self.kv_bytes = 2 * layers * batch * self.kv_heads * (context + 1) * hd * el

    def step(self, allreduce=None):
        """One decode step; allreduce(t), when given, sums t over the tensor-parallel group in place."""
        b, hd, pos = self.batch, self.head_dim, self.context
        x = self.x
        for L in self.layers:
            h = rms_norm(x, L['n1'])
            qkv = F.linear(h, L['qkv'])
            q, k, v = qkv.split([self.heads * hd, self.kv_heads * hd, self.kv_heads * hd], -1)
            L['k'][:, :, pos] = k.view(b, self.kv_heads, hd)
            L['v'][:, :, pos] = v.view(b, self.kv_heads, hd)
            q = q.view(b, self.heads, 1, hd)
            attn = F.scaled_dot_product_attention(q, L['k'], L['v'], enable_gqa=self.heads != self.kv_heads)
            out = F.linear(attn.reshape(b, -1), L['o'])
            if allreduce:
                allreduce(out)  # row-parallel output projection: partial sums
            x = x + out
            h = rms_norm(x, L['n2'])
            gate, up = F.linear(h, L['gate_up']).chunk(2, -1)
            out = F.linear(F.silu(gate) * up, L['down'])
            if allreduce:
                allreduce(out)  # row-parallel down projection: partial sums
            x = x + out
        return F.linear(rms_norm(x, self.final_norm), self.lm_head)


def time_steps(fn, iters):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / iters


def kernels_per_step(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def measure(model, tp, batch, context, iters, device, dtype):
    shard = Shard(model, tp, batch, context, device, dtype)
    with torch.no_grad():
        for _ in range(3):
            shard.step()
        eager_us = time_steps(shard.step, iters)
        kernels = kernels_per_step(shard.step)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                shard.step()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            shard.step()
        graph.replay()
        graph_us = time_steps(graph.replay, iters)
    row = {'model': model, 'tp': tp, 'batch': batch, 'context': context, 'layers': len(shard.layers),
           'weightBytes': shard.weight_bytes, 'kvBytes': shard.kv_bytes, 'kernelsPerStep': kernels,
           'eagerUs': round(eager_us, 2), 'graphUs': round(graph_us, 2), 'iters': iters}
    del graph, shard
    torch.cuda.empty_cache()
    return row


def capture(fn):
    """fn captured in a CUDA graph after two warm-up runs on a side stream (NCCL calls included)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    return graph


def record_graph_trace(graph, rank, trace_dir, dist, replays=3):
    """A PyTorch-profiler trace of `replays` replays of the step with AllReduce, rank r to
    trace_dir/tp-graph.rank<r>.trace.json.gz (for llcomm diagnose across ranks: every kernel of the graph, NCCL's
    included, on one host clock)."""
    import gzip
    os.makedirs(trace_dir, exist_ok=True)
    dist.barrier()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            graph.replay()
        torch.cuda.synchronize()
    plain = os.path.join(trace_dir, f'tp-graph.rank{rank}.trace.json')
    prof.export_chrome_trace(plain)
    with open(plain, 'rb') as f, gzip.open(plain + '.gz', 'wb', compresslevel=9) as g:
        g.write(f.read())
    os.remove(plain)


# (model, batch, context) measured with --tp-real N: shards of N GPUs
TP_REAL_CONFIGS = [('llama-3.1-8b', 1, 1024), ('llama-3.1-8b', 16, 1024), ('llama-3.1-70b', 1, 1024),
                   ('llama-3.1-70b', 16, 4096)]


def measure_tp_real(rank, args):
    """One rank of --tp-real: every rank runs the same sequence (the NCCL calls must match); rank 0 reports."""
    import torch.distributed as dist
    n = args.tp_real
    os.environ.setdefault('NCCL_NVLS_ENABLE', '0')  # never NVLink multicast on shared machines
    os.environ.setdefault('MASTER_ADDR', '127.0.0.1')
    os.environ.setdefault('MASTER_PORT', '29534')
    device, dtype = torch.device('cuda', rank), torch.bfloat16
    torch.cuda.set_device(device)
    dist.init_process_group('nccl', rank=rank, world_size=n, device_id=device)
    torch.manual_seed(rank)
    ar = lambda t: dist.all_reduce(t)
    rows = []
    keep = set(filter(None, args.only.split(',')))
    for model, batch, context in TP_REAL_CONFIGS:
        if keep and model not in keep:
            continue
        t0 = time.time()
        shard = Shard(model, n, batch, context, device, dtype)
        timed = {}
        with torch.no_grad():
            for name, fn in (('eagerUs', shard.step), ('eagerArUs', lambda: shard.step(ar))):
                for _ in range(3):
                    fn()
                dist.barrier()
                timed[name] = time_steps(fn, args.iters)
            graphs = {'graphUs': capture(shard.step), 'graphArUs': capture(lambda: shard.step(ar))}
            for name, g in graphs.items():
                dist.barrier()
                timed[name] = time_steps(g.replay, args.iters)
            if args.trace_dir and not rows:  # the first configuration only: a few replays, profiled on every rank
                record_graph_trace(graphs['graphArUs'], rank, args.trace_dir, dist)
        per_rank = [None] * n
        dist.all_gather_object(per_rank, timed)
        layers = len(shard.layers)
        row = {'model': model, 'tp': n, 'batch': batch, 'context': context, 'layers': layers,
               'allReducesPerStep': 2 * layers, 'allReduceBytes': batch * shard.hidden * 2,
               'weightBytes': shard.weight_bytes, 'kvBytes': shard.kv_bytes,
               **{k: round(v, 2) for k, v in timed.items()}, 'perRank': per_rank, 'iters': args.iters}
        row['allReduceCostUs'] = round(row['graphArUs'] - row['graphUs'], 2)
        row['perAllReduceUs'] = round(row['allReduceCostUs'] / row['allReducesPerStep'], 3)
        row['wallS'] = round(time.time() - t0, 1)
        if rank == 0:
            print(json.dumps({k: v for k, v in row.items() if k != 'perRank'}), flush=True)
        rows.append(row)
        del graphs, shard
        torch.cuda.empty_cache()
    if rank == 0:
        props = torch.cuda.get_device_properties(device)
        v = torch.cuda.nccl.version()
        doc = {'date': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()), 'device': props.name, 'gpus': n,
               'torch': torch.__version__, 'nccl': '.'.join(map(str, v)) if isinstance(v, (tuple, list)) else str(v),
               'command': 'python3 scripts/measure-decode.py --tp-real %d --out OUT/decode-tp%d.json --iters %d'
                          % (n, n, args.iters), 'rows': rows}
        with open(args.out, 'w') as f:
            json.dump(doc, f, indent=2)
        print('model tp batch ctx graph_us graph_ar_us ar_cost_us per_ar_us eager_us eager_ar_us')
        for r in rows:
            print(r['model'], r['tp'], r['batch'], r['context'], r['graphUs'], r['graphArUs'], r['allReduceCostUs'],
                  r['perAllReduceUs'], r['eagerUs'], r['eagerArUs'])
    dist.barrier()
    # Leave without destroy_process_group: on the run of 2026-11-29 (two H200s) the processes hung at exit after the
    # results were written, with NCCL calls captured in CUDA graphs, until the call's 300 s limit.
    os._exit(0)


def gemv_bandwidth(device, dtype, rows=16384, cols=8192, iters=50):
    w = torch.randn(rows, cols, device=device, dtype=dtype)
    x = torch.randn(1, cols, device=device, dtype=dtype)
    us = time_steps(lambda: F.linear(x, w), iters)
    return {'rows': rows, 'cols': cols, 'timeUs': round(us, 2), 'achievedGBs': round(w.numel() * 2 / us / 1e3, 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', required=True)
    ap.add_argument('--iters', type=int, default=30)
    ap.add_argument('--only', default='', help='comma-separated model names to keep')
    ap.add_argument('--trace-dir', default='', help='with --tp-real: profile 3 graph replays of the first shape per rank')
    ap.add_argument('--tp-real', type=int, default=0,
                    help='N GPUs: real tensor-parallel steps with and without NCCL AllReduce (one process per GPU)')
    args = ap.parse_args()
    if args.tp_real:
        if torch.cuda.device_count() < args.tp_real:
            raise SystemExit(f'--tp-real {args.tp_real} needs {args.tp_real} GPUs, found {torch.cuda.device_count()}')
        import torch.multiprocessing as mp
        mp.spawn(measure_tp_real, args=(args,), nprocs=args.tp_real, join=True)
        return
    device, dtype = torch.device('cuda', 0), torch.bfloat16
    torch.cuda.set_device(device)
    torch.manual_seed(0)
    rows = []
    keep = set(filter(None, args.only.split(',')))
    for model, tp, batch, context in CONFIGS:
        if keep and model not in keep:
            continue
        t0 = time.time()
        row = measure(model, tp, batch, context, args.iters, device, dtype)
        row['wallS'] = round(time.time() - t0, 1)
        print(json.dumps(row), flush=True)
        rows.append(row)
    props = torch.cuda.get_device_properties(device)
    doc = {'date': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()), 'device': props.name, 'torch': torch.__version__,
           'command': 'python3 scripts/measure-decode.py --out OUT/decode-shards.json --iters %d' % args.iters,
           'gemv': gemv_bandwidth(device, dtype), 'rows': rows}
    with open(args.out, 'w') as f:
        json.dump(doc, f, indent=2)
    print('model tp batch ctx kernels eager_us graph_us weightMB')
    for r in rows:
        print(r['model'], r['tp'], r['batch'], r['context'], r['kernelsPerStep'], r['eagerUs'], r['graphUs'],
              round(r['weightBytes'] / 1e6))


if __name__ == '__main__':
    main()
