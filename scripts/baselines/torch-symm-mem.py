#!/usr/bin/env python3
"""The AllReduce kernels that PyTorch-based inference servers call at small sizes, timed the way `llcomm bench`
times its own (a CUDA graph of back-to-back calls, replayed; per call = replay time / calls), so that
`llcomm bench --from OURS.json --baseline THIS.json` can print them side by side.

Algorithms (one process per GPU, torch.distributed over NCCL for set-up):
  torch-symm-oneshot   torch.ops.symm_mem.one_shot_all_reduce on a symmetric-memory input (out of place)
  torch-symm-twoshot   torch.ops.symm_mem.two_shot_all_reduce_ on a symmetric-memory input (in place)
  torch-symm-staged    copy the input into a symmetric buffer, two_shot_all_reduce_ there, copy the result out: the
                       sequence vLLM's SymmMemCommunicator runs at world sizes outside its multimem table (2 GPUs on
                       Hopper), so the copies a server pays are in the figure
  torch-nccl           torch.distributed.all_reduce (NCCL through PyTorch's process group)
NVLink multicast stays off: nothing here calls multimem_all_reduce_, and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NCCL_NVLS_ENABLE=0 are set before torch is imported (the script refuses to run if either is set otherwise).

Timing, as in src/backends/cuda/benchmark.ts: CALLS_PER_GRAPH (100) calls per graph, rotating over INPUT_SETS (4)
input buffers; iters / 100 timed replays after the warm-up replays; events on the capturing stream of each rank; the
row's medianUs is rank 0's median over replays (llcomm's bench reports its first stream's, rank 0's). Before each
replay the ranks meet at a barrier, so a replay starts within the barrier's skew on every rank.

Correctness, before timing, on fresh seeded data: one call; every rank's output is compared with the float64 sum of
all ranks' inputs (each rank regenerates every rank's input from its seed) and counted `wrong` where it is off by
more than the dtype allows: u·(|sum| + (ranks − 1)·Σ|inputs|), u its unit roundoff (the result's rounding plus an
accumulation in the dtype itself, per element); outputs are gathered and checked bitwise equal across ranks (`ranksAgree`).

Usage (the GPU machine; one process per visible GPU):
  python3 scripts/baselines/torch-symm-mem.py --sizes 8,64,...,1M --dtype bf16,f32 --iters 500 --warmup 100 \
      --commit $(git rev-parse --short HEAD) --out OUT/torch-symm-2gpu.json
"""
import argparse
import datetime
import json
import os
import platform
import sys

if os.environ.setdefault('TORCH_SYMM_MEM_DISABLE_MULTICAST', '1') != '1' or os.environ.setdefault(
    'NCCL_NVLS_ENABLE', '0'
) != '0':
    sys.exit('refusing to run: TORCH_SYMM_MEM_DISABLE_MULTICAST must be 1 and NCCL_NVLS_ENABLE 0 (no NVLink multicast)')

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed._symmetric_memory as symm_mem  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

CALLS_PER_GRAPH = 100
INPUT_SETS = 4
ALGORITHMS = ['torch-symm-oneshot', 'torch-symm-twoshot', 'torch-symm-staged', 'torch-nccl']
DTYPES = {'bf16': torch.bfloat16, 'f32': torch.float32}
# unit roundoff (half an ulp, relative) of each dtype
UNIT_ROUNDOFF = {'bf16': 2.0**-8, 'f32': 2.0**-24}


def parse_size(s: str) -> int:
    s = s.strip().upper()
    scale = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}
    return int(s[:-1]) * scale[s[-1]] if s[-1] in scale else int(s)


def seeded_input(rank: int, count: int, dtype: torch.dtype, device: torch.device, salt: int) -> torch.Tensor:
    g = torch.Generator(device='cpu').manual_seed(1000003 * (rank + 1) + salt)
    return (torch.rand(count, generator=g, dtype=torch.float64) * 2 - 1).to(dtype).to(device)


class Op:
    """One algorithm bound to its buffers: call(i) runs the AllReduce of input set i and returns the output tensor."""

    def __init__(self, name: str, count: int, dtype: torch.dtype, device: torch.device, group: str):
        self.name, self.count, self.group = name, count, group
        if name == 'torch-nccl':
            self.inputs = [torch.zeros(count, dtype=dtype, device=device) for _ in range(INPUT_SETS)]
        else:
            # symmetric memory: every rank allocates the same sizes in the same order, then rendezvous
            self.inputs = []
            for _ in range(INPUT_SETS):
                t = symm_mem.empty(count, dtype=dtype, device=device)
                symm_mem.rendezvous(t, group)
                self.inputs.append(t)
        if name == 'torch-symm-staged':
            self.staging = [torch.zeros(count, dtype=dtype, device=device) for _ in range(INPUT_SETS)]
            self.outputs = [torch.zeros(count, dtype=dtype, device=device) for _ in range(INPUT_SETS)]

    def load(self, i: int, values: torch.Tensor) -> None:
        (self.staging if self.name == 'torch-symm-staged' else self.inputs)[i].copy_(values)

    def call(self, i: int) -> torch.Tensor:
        x = self.inputs[i]
        if self.name == 'torch-symm-oneshot':
            return torch.ops.symm_mem.one_shot_all_reduce(x, 'sum', self.group)
        if self.name == 'torch-symm-twoshot':
            torch.ops.symm_mem.two_shot_all_reduce_(x, 'sum', self.group)
            return x
        if self.name == 'torch-symm-staged':
            x.copy_(self.staging[i])
            torch.ops.symm_mem.two_shot_all_reduce_(x, 'sum', self.group)
            self.outputs[i].copy_(x)
            return self.outputs[i]
        dist.all_reduce(x)
        return x


def check(op: Op, dtype_name: str, world: int, rank: int, device: torch.device, salt: int) -> tuple[int, bool]:
    dtype = DTYPES[dtype_name]
    ins = [seeded_input(r, op.count, dtype, torch.device('cpu'), salt) for r in range(world)]
    op.load(0, ins[rank].to(device))
    dist.barrier()
    out = op.call(0).clone()
    torch.cuda.synchronize()
    exact = torch.stack([t.to(torch.float64) for t in ins]).sum(0)
    magnitude = torch.stack([t.to(torch.float64).abs() for t in ins]).sum(0)
    # the result's rounding, plus (ranks - 1) roundings as if the sum were accumulated in the dtype itself
    bound = UNIT_ROUNDOFF[dtype_name] * (exact.abs() + (world - 1) * magnitude)
    wrong = int(((out.cpu().to(torch.float64) - exact).abs() > bound).sum())
    gathered = [torch.empty_like(out) for _ in range(world)]
    dist.all_gather(gathered, out)
    bits = out.view(torch.int16 if out.element_size() == 2 else torch.int32)
    agree = all(torch.equal(g.view(bits.dtype), bits) for g in gathered)
    return wrong, agree


def time_op(op: Op, iters: int, warmup: int, device: torch.device) -> list[float]:
    stream = torch.cuda.Stream(device)
    for i in range(INPUT_SETS):
        op.load(i, torch.zeros(op.count, dtype=op.inputs[0].dtype, device=device))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        op.call(0)  # first call outside the graph: lazy set-up (workspace, communicator) is not captured
        stream.synchronize()
        dist.barrier()
        with torch.cuda.graph(graph, stream=stream):
            for c in range(CALLS_PER_GRAPH):
                op.call(c % INPUT_SETS)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    per_call = []
    replays = max(1, -(-iters // CALLS_PER_GRAPH))
    for r in range(max(1, -(-warmup // CALLS_PER_GRAPH)) + replays):
        torch.cuda.synchronize()
        dist.barrier()
        with torch.cuda.stream(stream):
            start.record(stream)
            graph.replay()
            end.record(stream)
        end.synchronize()
        if r >= max(1, -(-warmup // CALLS_PER_GRAPH)):
            per_call.append(start.elapsed_time(end) * 1000 / CALLS_PER_GRAPH)
    del graph
    return per_call


def worker(rank: int, world: int, args: argparse.Namespace) -> None:
    os.environ.setdefault('MASTER_ADDR', '127.0.0.1')
    os.environ.setdefault('MASTER_PORT', '29561')
    device = torch.device('cuda', rank)
    torch.cuda.set_device(device)
    dist.init_process_group('nccl', rank=rank, world_size=world, device_id=device)
    group = dist.group.WORLD.group_name
    rows, skipped = [], []
    for dtype_name in args.dtype.split(','):
        elem = torch.tensor([], dtype=DTYPES[dtype_name]).element_size()
        for bytes_ in [parse_size(s) for s in args.sizes.split(',')]:
            count = bytes_ // elem
            for salt, name in enumerate(args.algorithms.split(',')):
                try:
                    op = Op(name, count, DTYPES[dtype_name], device, group)
                    wrong, agree = check(op, dtype_name, world, rank, device, salt + 17 * bytes_)
                    times = time_op(op, args.iters, args.warmup, device)
                except Exception as ex:  # an op that cannot serve this shape: recorded, not fatal
                    skipped.append({'algorithm': name, 'dtype': dtype_name, 'bytes': bytes_, 'reason': repr(ex)[:300]})
                    if rank == 0:
                        print(f'{name} {dtype_name} {bytes_}: skipped ({ex!r})'[:300], flush=True)
                    dist.barrier()
                    continue
                finally:
                    torch.cuda.synchronize()
                t = torch.tensor(times, dtype=torch.float64)
                row = {
                    'backend': 'torch',
                    'ranks': world,
                    'algorithm': name,
                    'dtype': dtype_name,
                    'bytes': bytes_,
                    'medianUs': float(t.median()),
                    'p99Us': float(t.quantile(0.99)),
                    'wrong': wrong,
                    'ranksAgree': agree,
                    'iters': len(times) * CALLS_PER_GRAPH,
                    'warmup': args.warmup,
                }
                # every rank's median, for the skew the barrier leaves (rank 0's is the row's)
                medians = [torch.zeros(1, dtype=torch.float64, device=device) for _ in range(world)]
                dist.all_gather(medians, torch.tensor([row['medianUs']], dtype=torch.float64, device=device))
                row['rankMedianUs'] = [float(m.item()) for m in medians]
                wrongs = [torch.zeros(1, dtype=torch.int64, device=device) for _ in range(world)]
                dist.all_gather(wrongs, torch.tensor([wrong], dtype=torch.int64, device=device))
                row['wrong'] = int(sum(int(w.item()) for w in wrongs))
                rows.append(row)
                if rank == 0:
                    print(f"{name:20s} {dtype_name:5s} {bytes_:>9d}  {row['medianUs']:8.2f} us  wrong {row['wrong']}"
                          f"  agree {agree}", flush=True)
    if rank == 0:
        doc = {
            'machine': {
                'hostname': platform.node(),
                'gpu': torch.cuda.get_device_name(device),
                'gpus': world,
                'torch': torch.__version__,
                'nccl': '.'.join(map(str, torch.cuda.nccl.version())),
            },
            'commit': args.commit,
            'date': datetime.datetime.now(datetime.timezone.utc).isoformat(),
            'command': 'python3 scripts/baselines/torch-symm-mem.py ' + ' '.join(sys.argv[1:]),
            'method': f'CUDA graph of {CALLS_PER_GRAPH} back-to-back calls over {INPUT_SETS} input sets, replayed; '
            'per call = replay time / calls; median over replays of rank 0; ranks meet at a barrier before each replay',
            # the same library as llcomm bench's nccl row: their ratio checks that the two harnesses time alike
            'sameAs': {'torch-nccl': 'nccl'},
            'rows': rows,
            'skipped': skipped,
        }
        with open(args.out, 'w') as f:
            json.dump(doc, f, indent=1)
        print(f'wrote {args.out}: {len(rows)} rows, {len(skipped)} skipped', flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--sizes', default='8,64,512,2K,4K,8K,16K,32K,64K,128K,256K,512K,1M')
    ap.add_argument('--dtype', default='bf16,f32')
    ap.add_argument('--algorithms', default=','.join(ALGORITHMS))
    ap.add_argument('--iters', type=int, default=500)
    ap.add_argument('--warmup', type=int, default=100)
    ap.add_argument('--gpus', type=int, default=torch.cuda.device_count())
    ap.add_argument('--commit', default=os.environ.get('LLCOMM_COMMIT', 'unknown'))
    ap.add_argument('--out', required=True)
    args = ap.parse_args()
    for a in args.algorithms.split(','):
        if a not in ALGORITHMS:
            sys.exit(f'unknown algorithm {a!r}; known: {", ".join(ALGORITHMS)}')
    if args.gpus < 2:
        sys.exit(f'needs 2 or more GPUs, found {args.gpus}')
    mp.spawn(worker, args=(args.gpus, args), nprocs=args.gpus, join=True)


if __name__ == '__main__':
    main()
