// Where does oneshot-ll's time go above the speed-of-light sum at 2 ranks, 8 B? A ladder of kernels on one GPU,
// each adding one piece of the real kernel's path to the one before, timed the way bench and sol time a call:
// 200 launches captured in one CUDA graph, replay time / 200, median over interleaved rounds. The last rungs are
// the real llcomm_oneshot_ll kernels (included from kernels/allreduce/oneshot_ll.cu) on the same buffers.
//   nvcc -arch=sm_90 -std=c++17 -O3 -I kernels scripts/probe/prologue/prologue.cu -o /tmp/prologue && /tmp/prologue
// Two virtual ranks in one launch (gridDim 2 x 512 threads), as `llcomm bench --devices 0,0` runs them.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

// The real kernels, one source at a time (reset-variants.h says why the variant macros are reset between them).
#include "allreduce/oneshot_ll.cu"
#include "reset-variants.h"
#define LLCOMM_VARIANT_oneshot_ll(protocol, dtype, op)
#include "allreduce/oneshot_sentinel.cu"
#include "reset-variants.h"
#define LLCOMM_VARIANT_oneshot_ll(protocol, dtype, op)
#define LLCOMM_VARIANT_oneshot_sentinel(protocol, dtype, op)
#include "allreduce/twoshot_sentinel.cu"

// Kernels that take their rank from llcBlockRole are launched in the tree's grid shape (an A/B tree may take the
// launch slot from blockIdx.y).
#ifdef LLCOMM_PROBE_GRID_2D
#define REAL_GRID dim3(1, 2) // the tree takes its launch slot from blockIdx.y
#else
#define REAL_GRID 2
#endif

#define CHECK(x)                                                                                                     \
  do {                                                                                                               \
    cudaError_t e_ = (x);                                                                                            \
    if (e_ != cudaSuccess) {                                                                                         \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                       \
      std::exit(1);                                                                                                  \
    }                                                                                                                \
  } while (0)

struct SmallParams {
  llc_u64 unused;
};

// Rung 0/1: an empty kernel with an 8-byte parameter (sol's kernel floor is rung 0's shape, <<<1, 32>>>).
extern "C" __global__ void rung_empty_small(const __grid_constant__ SmallParams) {}
// Rung 2: the same with the all-reduce parameter block (about 2.3 KB, copied into the launch).
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) rung_empty_big(const __grid_constant__ LlcommAllReduceParams) {}
// Rung 3: plus the 32 KB static shared stage (kept by a branch that is never taken: flags is 0).
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) rung_stage(const __grid_constant__ LlcommAllReduceParams p) {
  __shared__ llc_u32 stage[LLCOMM_PEER_STAGE_WORDS];
  if (p.flags == 0x5eedu) {
    stage[threadIdx.x] = threadIdx.x;
    __syncthreads();
    reinterpret_cast<llc_u32*>(p.errorWord)[7] = stage[(threadIdx.x + 1) % LLCOMM_THREADS];
  }
}
// Rung 4: plus the role and the channel epoch: load the epoch word (relaxed.sys), __syncthreads, store it + 1.
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) rung_epoch(const __grid_constant__ LlcommAllReduceParams p) {
  const LlcBlockRole role = llcBlockRole(p.blocksPerRank, p.launchRanks);
  LlcChannel ch(p.scratch[role.rank], role.channel);
  ch.advanceEpoch();
}
// Rung 5: plus the input load and the output store of the threads that hold a slot (8 B bf16: 2 LL8 slots).
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) rung_io(const __grid_constant__ LlcommAllReduceParams p) {
  const LlcCall call = llcBeginCall<LLCOMM_DTYPE_BF16>(p);
  LlcChannel ch(p.scratch[call.role.rank], call.role.channel);
  const llc_u32 slots = static_cast<llc_u32>(llcCeilDiv(call.bytes, 4u));
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    llc_u32 w[1];
    llcLoadPayload<LLCOMM_DTYPE_BF16, 1>(call.input, 4ull * s, call.bytes, w);
    w[0] += ch.epoch; // depends on the epoch as a sent packet does
    llcStorePayload<LLCOMM_DTYPE_BF16, 1>(call.output, 4ull * s, call.bytes, w);
  }
  ch.advanceEpoch();
}
// Rung 6: the minimal one-shot LL8 exchange: each slot thread sends its word to the peer and polls its own lane
// (no waiter, no batch, no reduction beyond one integer add): the design's floor with llcomm's buffers.
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) rung_exchange(const __grid_constant__ LlcommAllReduceParams p) {
  const LlcCall call = llcBeginCall<LLCOMM_DTYPE_BF16>(p);
  LlcChannel ch(p.scratch[call.role.rank], call.role.channel);
  const llc_u64 laneBytes = p.ll.channelHalfBytes / p.nranks / 16u * 16u;
  const llc_u64 region = ch.regionOffset(p.ll);
  const llc_u32 me = call.role.rank, peer = me ^ 1u;
  const llc_u32 slots = static_cast<llc_u32>(llcCeilDiv(call.bytes, 4u));
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    llc_u32 w[1];
    llcLoadPayload<LLCOMM_DTYPE_BF16, 1>(call.input, 4ull * s, call.bytes, w);
    char* dst = reinterpret_cast<char*>(p.recvBuf[peer]) + region + me * laneBytes + 8ull * s;
    LlcLL8::write(dst, w, ch.epoch);
    const char* src = reinterpret_cast<const char*>(p.recvBuf[me]) + region + peer * laneBytes + 8ull * s;
    llc_u32 got[1];
    for (llc_u32 spins = 0; !LlcLL8::tryRead(src, ch.epoch, got); ++spins) {
      if (spins == (1u << 24)) { // a probe bug, not a measurement: record it and stop waiting
        llcStoreRelaxedSys(reinterpret_cast<llc_u32*>(p.errorWord), LLCOMM_ERR_TIMEOUT);
        break;
      }
    }
    w[0] += got[0];
    llcStorePayload<LLCOMM_DTYPE_BF16, 1>(call.output, 4ull * s, call.bytes, w);
  }
  ch.advanceEpoch();
}


// Rung variants that isolate the epoch's cost: the rank's scratch pointer by a select of static parameter offsets
// (no launchRanks -> scratch[rank] chain of dependent constant loads), and the epoch load without the final store.
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) rung_epoch_static(const __grid_constant__ LlcommAllReduceParams p) {
  LlcChannel ch(blockIdx.x == 0 ? p.scratch[0] : p.scratch[1], 0);
  ch.advanceEpoch();
}
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) rung_epoch_load_only(const __grid_constant__ LlcommAllReduceParams p) {
  const LlcBlockRole role = llcBlockRole(p.blocksPerRank, p.launchRanks);
  LlcChannel ch(p.scratch[role.rank], role.channel);
  __syncthreads();
  if (threadIdx.x == 0 && ch.epoch == 0x5eedu) llcStoreRelaxedSys(ch.epochWord, ch.epoch); // never taken
}
// rung_io with the input word loaded before the epoch load (program order of the two volatile loads).
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) rung_io_first(const __grid_constant__ LlcommAllReduceParams p) {
  const LlcCall call = llcBeginCall<LLCOMM_DTYPE_BF16>(p);
  const llc_u32 slots = static_cast<llc_u32>(llcCeilDiv(call.bytes, 4u));
  llc_u32 w[1] = {0};
  if (threadIdx.x < slots) llcLoadPayload<LLCOMM_DTYPE_BF16, 1>(call.input, 4ull * threadIdx.x, call.bytes, w);
  LlcChannel ch(p.scratch[call.role.rank], call.role.channel);
  if (threadIdx.x < slots) {
    w[0] += ch.epoch;
    llcStorePayload<LLCOMM_DTYPE_BF16, 1>(call.output, 4ull * threadIdx.x, call.bytes, w);
  }
  ch.advanceEpoch();
}

// Which link of the chain launchRanks[blockIdx.x / blocksPerRank] -> scratch[rank] -> epoch costs? (epoch rung
// shapes; 2D variants are launched as a 1 x 2 grid, blockIdx.y being the launch slot.)
__device__ __forceinline__ void rungEpochAt(llc_u64 scratch) {
  LlcChannel ch(scratch, 0);
  ch.advanceEpoch();
}
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) rung_chain_nodiv(const __grid_constant__ LlcommAllReduceParams p) {
  rungEpochAt(p.scratch[p.launchRanks[blockIdx.x]]);
}
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) rung_chain_direct(const __grid_constant__ LlcommAllReduceParams p) {
  rungEpochAt(p.scratch[blockIdx.x]);
}
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) rung_chain_y_ranks(const __grid_constant__ LlcommAllReduceParams p) {
  rungEpochAt(p.scratch[p.launchRanks[blockIdx.y]]);
}
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) rung_chain_y_direct(const __grid_constant__ LlcommAllReduceParams p) {
  rungEpochAt(p.scratch[blockIdx.y]);
}

struct Rung {
  std::string name;
  const void* fn;
  dim3 blocks;
  int threads;
  bool big;
  llc_u64 count = 4; // elements of bf16 (or f32 for the f32 kernels) per rank
  bool ladder = false; // a rung of the ladder: its delta is against the previous ladder rung
};

int main(int argc, char** argv) {
  const int perGraph = 200, rounds = argc > 1 ? std::atoi(argv[1]) : 7, replays = 11;
  CHECK(cudaSetDevice(0));
  const int nranks = 2;
  const size_t halfBytes = 256 * 1024, recvBytes = 4 * halfBytes;
  LlcommAllReduceParams p;
  std::memset(&p, 0, sizeof p);
  void *in[2], *out[2], *recv[2], *scratch[2], *err;
  for (int r = 0; r < nranks; ++r) {
    CHECK(cudaMalloc(&in[r], 1 << 20));
    CHECK(cudaMalloc(&out[r], 1 << 20));
    CHECK(cudaMalloc(&recv[r], recvBytes));
    CHECK(cudaMalloc(&scratch[r], LLCOMM_SCRATCH_BYTES));
    CHECK(cudaMemset(in[r], 0, 1 << 20));
    CHECK(cudaMemset(recv[r], 0, recvBytes));
    CHECK(cudaMemset(static_cast<char*>(recv[r]) + 2 * halfBytes, 0xFF, 2 * halfBytes));
    CHECK(cudaMemset(scratch[r], 0, LLCOMM_SCRATCH_BYTES));
    p.input[r] = reinterpret_cast<llc_u64>(in[r]);
    p.output[r] = reinterpret_cast<llc_u64>(out[r]);
    p.recvBuf[r] = reinterpret_cast<llc_u64>(recv[r]);
    p.scratch[r] = reinterpret_cast<llc_u64>(scratch[r]);
    p.launchRanks[r] = static_cast<llc_u8>(r);
  }
  CHECK(cudaMalloc(&err, sizeof(LlcommErrorWord)));
  CHECK(cudaMemset(err, 0, sizeof(LlcommErrorWord)));
  p.errorWord = reinterpret_cast<llc_u64>(err);
  p.count = 4; // 8 bytes of bf16
  p.timeoutNs = 100ull * 1000 * 1000; // 100 ms: a hang ends with the error word set
  p.ll.offset = 0;
  p.ll.channelHalfBytes = halfBytes;
  p.sentinel.offset = 2 * halfBytes; // after the LL region's two halves; filled with the sentinel below
  p.sentinel.channelHalfBytes = halfBytes;
  p.nranks = nranks;
  p.ranksInLaunch = nranks;
  p.blocksPerRank = 1;
  SmallParams sp{0};

  std::vector<Rung> rungs = {
      {"empty <<<1,32>>> 8 B param (sol floor)", (const void*)rung_empty_small, 1, 32, false, 4, true},
      {"empty <<<2,512>>> 8 B param", (const void*)rung_empty_small, 2, 512, false, 4, true},
      {"empty <<<2,512>>> all-reduce params", (const void*)rung_empty_big, 2, 512, true, 4, true},
      {"+ 32 KB static stage", (const void*)rung_stage, 2, 512, true, 4, true},
      {"+ role, epoch load, syncthreads, epoch store", (const void*)rung_epoch, REAL_GRID, 512, true, 4, true},
      {"+ input load, output store", (const void*)rung_io, REAL_GRID, 512, true, 4, true},
      {"+ LL8 send and poll (minimal exchange)", (const void*)rung_exchange, REAL_GRID, 512, true, 4, true},
      {"(epoch rung, scratch by static offsets)", (const void*)rung_epoch_static, 2, 512, true},
      {"(epoch rung, load only: no store)", (const void*)rung_epoch_load_only, REAL_GRID, 512, true},
      {"(epoch rung, launchRanks[blockIdx.x], no divide)", (const void*)rung_chain_nodiv, 2, 512, true},
      {"(epoch rung, scratch[blockIdx.x])", (const void*)rung_chain_direct, 2, 512, true},
      {"(epoch rung, launchRanks[blockIdx.y], 1x2 grid)", (const void*)rung_chain_y_ranks, dim3(1, 2), 512, true},
      {"(epoch rung, scratch[blockIdx.y], 1x2 grid)", (const void*)rung_chain_y_direct, dim3(1, 2), 512, true},
      {"(io rung, input loaded before the epoch)", (const void*)rung_io_first, REAL_GRID, 512, true},
      {"oneshot_ll ll8 bf16 8 B", (const void*)llcomm_oneshot_ll_ll8_bf16_sum, REAL_GRID, 512, true, 4},
      {"oneshot_ll ll8 f32 8 B", (const void*)llcomm_oneshot_ll_ll8_f32_sum, REAL_GRID, 512, true, 2},
      {"oneshot_ll ll16 bf16 8 B", (const void*)llcomm_oneshot_ll_ll16_bf16_sum, REAL_GRID, 512, true, 4},
      {"oneshot_ll ll8 bf16 2 KB", (const void*)llcomm_oneshot_ll_ll8_bf16_sum, REAL_GRID, 512, true, 1024},
      {"oneshot_ll ll16 bf16 8 KB", (const void*)llcomm_oneshot_ll_ll16_bf16_sum, REAL_GRID, 512, true, 4096},
      {"oneshot_sentinel bf16 8 B", (const void*)llcomm_oneshot_sentinel_sentinel_bf16_sum, REAL_GRID, 512, true, 4},
      {"oneshot_sentinel f32 8 B", (const void*)llcomm_oneshot_sentinel_sentinel_f32_sum, REAL_GRID, 512, true, 2},
      {"oneshot_sentinel bf16 32 KB", (const void*)llcomm_oneshot_sentinel_sentinel_bf16_sum, REAL_GRID, 512, true, 16384},
      {"twoshot_sentinel bf16 8 B", (const void*)llcomm_twoshot_sentinel_sentinel_bf16_sum, REAL_GRID, 512, true, 4},
      {"twoshot_sentinel bf16 32 KB", (const void*)llcomm_twoshot_sentinel_sentinel_bf16_sum, REAL_GRID, 512, true, 16384},
  };
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  std::vector<cudaGraphExec_t> execs;
  std::vector<LlcommAllReduceParams> params(rungs.size(), p);
  for (size_t k = 0; k < rungs.size(); ++k) {
    const Rung& r = rungs[k];
    params[k].count = r.count;
    void* args[1] = {r.big ? static_cast<void*>(&params[k]) : static_cast<void*>(&sp)};
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < perGraph; ++i) CHECK(cudaLaunchKernel(r.fn, r.blocks, dim3(r.threads), args, 0, st));
    cudaGraph_t g;
    CHECK(cudaStreamEndCapture(st, &g));
    cudaGraphExec_t e;
    CHECK(cudaGraphInstantiate(&e, g, 0));
    CHECK(cudaGraphDestroy(g));
    execs.push_back(e);
  }
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<std::vector<double>> us(rungs.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < rungs.size(); ++k) {
      CHECK(cudaGraphLaunch(execs[k], st)); // warm-up replay
      for (int rep = 0; rep < replays; ++rep) {
        CHECK(cudaEventRecord(a, st));
        CHECK(cudaGraphLaunch(execs[k], st));
        CHECK(cudaEventRecord(b, st));
        CHECK(cudaEventSynchronize(b));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        us[k].push_back(1000.0 * ms / perGraph);
      }
    }
  }
  LlcommErrorWord ew;
  CHECK(cudaMemcpy(&ew, err, sizeof ew, cudaMemcpyDeviceToHost));
  if (ew.code != 0) {
    std::fprintf(stderr, "device error word: code %u rank %u peer %u what %u\n", ew.code, ew.rank, ew.peer, ew.what);
    return 2;
  }
  std::printf("# prologue ladder: 2 virtual ranks (8 B bf16 unless named), %d launches per graph, median of %d rounds x %d replays\n",
              perGraph, rounds, replays);
  std::printf("# params %zu bytes\n", sizeof(LlcommAllReduceParams));
  std::printf("%-48s %10s %10s\n", "rung", "us/call", "delta");
  double prev = 0;
  for (size_t k = 0; k < rungs.size(); ++k) {
    std::vector<double> v = us[k];
    std::sort(v.begin(), v.end());
    const double med = v[v.size() / 2];
    if (rungs[k].ladder) {
      std::printf("%-48s %10.3f %+10.3f\n", rungs[k].name.c_str(), med, k == 0 ? 0.0 : med - prev);
      prev = med;
    } else {
      std::printf("%-48s %10.3f\n", rungs[k].name.c_str(), med);
    }
  }
  return 0;
}
