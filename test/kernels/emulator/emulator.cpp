// Runs one all-reduce kernel of the instantiation table on emulated ranks (host threads), for a sequence of calls
// on the same buffers, and checks: every launched rank's output against a float64 reference (the test data are
// exactly representable so every algorithm must be exact), bitwise identity across ranks, the buffer invariants
// between calls (sentinel region fully re-armed, LL128 lines zero), the channel epochs, guard bytes after every
// buffer, and, with an absent rank, that the launch ends with a TIMEOUT in the error word instead of hanging.
//
// usage: emulator KERNEL NRANKS THREADS TIMEOUT_MS ABSENT_RANK RECV_BYTES LL_OFF LL_HALF S_OFF S_HALF L128_OFF
//                 L128_HALF P_OFF P_HALF CALL...      where CALL = COUNT:BLOCKS[:MODE[:KERNEL]]
// MODE: inplace, or anything else (e.g. copy) for separate output buffers; KERNEL (a kernel of the same dtype): this
// call runs that kernel instead of KERNEL, on the same buffers, scratch and epochs (algorithms interleaved on one
// communicator).
// prints one JSON object.
// With LLCOMM_EMU_ODD=RANK:KERNEL:COUNT:BLOCKS[:CALL] in the environment, call CALL (default 0, the first; the calls
// before it run on every rank) launches that rank alone with its own kernel and count, concurrently with the launch
// of the other ranks (a mismatched call: the run then ends after that call, and the error word must say MISMATCH).
// LLCOMM_EMU_ODD_DELAY_MS: the odd rank's launch starts that much later (a peer process that launches late).
// LLCOMM_EMU_ODD_CONTINUE=1: the run goes on after the odd call with the calls after it, on every rank (their
// results are not checked: after a mismatch they are unspecified), so that a later kernel on the channel can find
// the odd call's mismatch (the deferred signature check, LLCOMM_SIG_DEFERRED); with LLCOMM_EMU_SPLIT_ERROR the odd
// rank keeps its own launch and error word for them too.
// LLCOMM_EMU_DUMP_SIGNATURES=1: the JSON also holds every rank's signature region after the run (hex u32s), for the
// host's reading of a TIMEOUT (src/backends/cuda/timeout-signature.ts).
// With LLCOMM_EMU_VALUES=accumulation the inputs are the f32-accumulation case (rank 0 holds +-256, the others
// +-0.25..0.625 in steps of 1/8; test/support/accumulation.ts): every partial sum is exact in f32 but not in
// f16/bf16, so only an f32 accumulation rounded once gives the reference.
#include "emu.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "allreduce/oneshot_ll.cu"
#include "undef_variants.h"
#include "allreduce/oneshot_sentinel.cu"
#include "undef_variants.h"
#include "allreduce/twoshot_sentinel.cu"
#include "undef_variants.h"
#include "allreduce/twoshot_atomic.cu"
#include "undef_variants.h"
#include "allreduce/oneshot_barrier.cu"
#include "undef_variants.h"
#include "allreduce/ring.cu"
#include "undef_variants.h"
#include "emu_harness.h"

// The signature-block builds (LLCOMM_SIG_BLOCK, LLCOMM_SIG_BLOCK_EMPTY; signature.cuh): one more block per launch,
// after the data blocks (the host's SIGNATURE_BLOCK, allreduce-launcher.ts).
#if defined(LLCOMM_SIG_BLOCK) || defined(LLCOMM_SIG_BLOCK_EMPTY)
static constexpr unsigned kSigBlocks = 1;
#else
static constexpr unsigned kSigBlocks = 0;
#endif

// Every member of the LL buffer handle, used by a kernel or not (reset, blockResetRange), must compile.
template struct LlBuffer<LlcLL16>;
template struct LlBuffer<LlcLL8>;
template struct LlBuffer<LlcSentinel<LLCOMM_DTYPE_F32>>;
template struct LlBuffer<LlcSentinel<LLCOMM_DTYPE_BF16>>;
template struct LlcAtomicLines<LLCOMM_DTYPE_F16>;

using KernelFn = void (*)(const LlcommAllReduceParams);
struct KernelEntry {
  const char* name;
  KernelFn fn;
};
// The registry comes from the same table the kernels were generated from.
#define LLCOMM_REGISTER(algorithm, protocol, dtype, op) \
  {"llcomm_" #algorithm "_" #protocol "_" #dtype "_" #op, &LLCOMM_KERNEL_NAME(algorithm, protocol, dtype, op)},
#define LLCOMM_VARIANT_oneshot_ll(p, d, o) LLCOMM_REGISTER(oneshot_ll, p, d, o)
#define LLCOMM_VARIANT_oneshot_sentinel(p, d, o) LLCOMM_REGISTER(oneshot_sentinel, p, d, o)
#define LLCOMM_VARIANT_twoshot_sentinel(p, d, o) LLCOMM_REGISTER(twoshot_sentinel, p, d, o)
#define LLCOMM_VARIANT_twoshot_sentinel_pull(p, d, o) LLCOMM_REGISTER(twoshot_sentinel_pull, p, d, o)
#define LLCOMM_VARIANT_twoshot_atomic(p, d, o) LLCOMM_REGISTER(twoshot_atomic, p, d, o)
#define LLCOMM_VARIANT_oneshot_barrier(p, d, o) LLCOMM_REGISTER(oneshot_barrier, p, d, o)
#define LLCOMM_VARIANT_ring(p, d, o) LLCOMM_REGISTER(ring, p, d, o)
static const KernelEntry kKernels[] = {
#include "instantiations.def"
};




int main(int argc, char** argv) {
  if (argc < 16) {
    std::fprintf(stderr, "usage: see emulator.cpp\n");
    return 2;
  }
  const std::string name = argv[1];
  const unsigned n = std::atoi(argv[2]), threads = std::atoi(argv[3]);
  const double timeoutMs = std::atof(argv[4]);
  const int absent = std::atoi(argv[5]);
  const size_t recvBytes = std::strtoull(argv[6], nullptr, 10);
  LlcommRegion regions[4];
  for (int i = 0; i < 4; ++i) {
    regions[i].offset = std::strtoull(argv[7 + 2 * i], nullptr, 10);
    regions[i].channelHalfBytes = std::strtoull(argv[8 + 2 * i], nullptr, 10);
  }
  KernelFn fn = nullptr;
  for (const auto& k : kKernels)
    if (name == k.name) fn = k.fn;
  if (!fn) {
    std::fprintf(stderr, "unknown kernel %s\n", name.c_str());
    return 2;
  }
  const char* values = std::getenv("LLCOMM_EMU_VALUES");
  const bool accumulation = values != nullptr && std::string(values) == "accumulation";
  int oddRank = -1;
  KernelFn oddFn = nullptr;
  unsigned long long oddCount = 0;
  unsigned oddBlocks = 0;
  int oddCall = 0;
  if (const char* odd = std::getenv("LLCOMM_EMU_ODD")) {
    char oddName[200] = {0};
    const int got = std::sscanf(odd, "%d:%199[^:]:%llu:%u:%d", &oddRank, oddName, &oddCount, &oddBlocks, &oddCall);
    if (got != 4 && got != 5) {
      std::fprintf(stderr, "bad LLCOMM_EMU_ODD %s\n", odd);
      return 2;
    }
    for (const auto& k : kKernels)
      if (std::string(oddName) == k.name) oddFn = k.fn;
    if (!oddFn) {
      std::fprintf(stderr, "unknown kernel %s\n", oddName);
      return 2;
    }
  }
  const int dt = name.find("_f32_") != std::string::npos ? LLCOMM_DTYPE_F32
                 : name.find("_f16_") != std::string::npos ? LLCOMM_DTYPE_F16
                                                           : LLCOMM_DTYPE_BF16;
  const size_t eb = dt == LLCOMM_DTYPE_F32 ? 4 : 2;
  const llc_u32 sentinelElem = dt == LLCOMM_DTYPE_F32 ? 0xFFFFFFFFu : 0xFFFFu;

  std::vector<std::unique_ptr<Buffer>> recv, scratch;
  for (unsigned r = 0; r < n; ++r) {
    recv.push_back(std::make_unique<Buffer>(recvBytes, 0x5A)); // plain region: garbage, nothing may rely on it
    unsigned char* b = recv.back()->data();
    std::memset(b + regions[0].offset, 0, LLCOMM_MAX_CHANNELS * 2 * regions[0].channelHalfBytes);
    std::memset(b + regions[1].offset, 0xFF, LLCOMM_MAX_CHANNELS * 2 * regions[1].channelHalfBytes);
    std::memset(b + regions[2].offset, 0, LLCOMM_MAX_CHANNELS * 2 * regions[2].channelHalfBytes);
    scratch.push_back(std::make_unique<Buffer>(LLCOMM_SCRATCH_BYTES, 0));
  }
  Buffer errorWord(sizeof(LlcommErrorWord), 0);
  // LLCOMM_EMU_SPLIT_ERROR=1 (with LLCOMM_EMU_ODD): the odd rank's launch gets an error word of its own, as a rank of
  // another process would (per-process mode: one error word per process), so neither side's check or timeout ends
  // the other side's waits; both words are reported.
  const bool splitError = std::getenv("LLCOMM_EMU_SPLIT_ERROR") != nullptr;
  Buffer oddErrorWord(sizeof(LlcommErrorWord), 0);

  const bool oddContinue = std::getenv("LLCOMM_EMU_ODD_CONTINUE") != nullptr;
  bool afterOdd = false; // a call after the odd one (LLCOMM_EMU_ODD_CONTINUE)
  const char* delayEnv = std::getenv("LLCOMM_EMU_ODD_DELAY_MS");
  const int oddDelayMs = delayEnv ? std::atoi(delayEnv) : 0;
  // Every present rank (the calls before the odd one), and the others of the odd call.
  std::vector<unsigned> everyRank, othersOfOdd;
  for (unsigned r = 0; r < n; ++r)
    if (static_cast<int>(r) != absent) {
      everyRank.push_back(r);
      if (static_cast<int>(r) != oddRank) othersOfOdd.push_back(r);
    }

  // LLCOMM_EMU_STORED_EPOCH: every channel's epoch word on every rank starts there (runs across the u32 wrap).
  const char* storedEnv = std::getenv("LLCOMM_EMU_STORED_EPOCH");
  const llc_u32 stored = storedEnv ? static_cast<llc_u32>(std::strtoull(storedEnv, nullptr, 10)) : 0u;
  for (unsigned r = 0; r < n; ++r)
    for (unsigned ch = 0; ch < LLCOMM_MAX_CHANNELS; ++ch)
      std::memcpy(scratch[r]->data() + LLCOMM_SCRATCH_EPOCHS_OFFSET + 4 * ch, &stored, 4);
  std::vector<unsigned> expectedEpoch(LLCOMM_MAX_CHANNELS, stored);
  long mismatches = 0, crossRank = 0, nanChecked = 0;
  std::string firstMismatch;
  std::mt19937 rng(12345);
  const auto t0 = std::chrono::steady_clock::now();
  for (int c = 15; c < argc; ++c) {
    unsigned long long count = 0;
    unsigned blocks = 0;
    char mode[16] = {0}, callName[200] = {0};
    std::sscanf(argv[c], "%llu:%u:%15[^:]:%199s", &count, &blocks, mode, callName);
    const bool inplace = std::string(mode) == "inplace";
    KernelFn callFn = fn;
    if (callName[0] != 0) {
      callFn = nullptr;
      for (const auto& k : kKernels)
        if (std::string(callName) == k.name) callFn = k.fn;
      const std::string cn = callName;
      const int cdt = cn.find("_f32_") != std::string::npos   ? LLCOMM_DTYPE_F32
                      : cn.find("_f16_") != std::string::npos ? LLCOMM_DTYPE_F16
                                                              : LLCOMM_DTYPE_BF16;
      if (!callFn || cdt != dt) {
        std::fprintf(stderr, "call kernel %s unknown or of another dtype\n", callName);
        return 2;
      }
    }
    const bool oddNow = oddRank >= 0 && c - 15 == oddCall;
    // The odd rank in a launch of its own: the odd call, and the calls after it when it has its own error word.
    const bool twoGroups = oddNow || (afterOdd && splitError);
    const std::vector<unsigned>& launchRanks = twoGroups ? othersOfOdd : everyRank;
    std::vector<std::unique_ptr<Buffer>> in, out;
    std::vector<std::vector<llc_u32>> inBits(n, std::vector<llc_u32>(count));
    const unsigned long long room = std::max(count, oddCount) * 4; // the odd rank may run another count and dtype
    for (unsigned r = 0; r < n; ++r) {
      in.push_back(std::make_unique<Buffer>(room, 0));
      out.push_back(inplace ? nullptr : std::make_unique<Buffer>(room, 0xCD));
      for (unsigned long long i = 0; i < count; ++i) {
        // k / 8 with |k| <= 8: every partial sum of up to 16 ranks is exact in bf16, f16 and f32.
        llc_u32 bits = fromDouble(dt, (static_cast<int>(rng() % 17) - 8) / 8.0);
        if (accumulation) {
          const double sign = i % 2 == 0 ? 1.0 : -1.0;
          bits = fromDouble(dt, r == 0 ? sign * 256.0 : sign * (0.25 + static_cast<double>((i * 7 + r * 3) % 4) * 0.125));
        }
        if (r == n - 1 && i % 97 == 13) bits = sentinelElem; // the sentinel pattern as user data: NaN in, NaN out
        inBits[r][i] = bits;
        std::memcpy(in[r]->data() + i * eb, &bits, eb);
      }
    }
    LlcommAllReduceParams p;
    std::memset(&p, 0, sizeof p);
    for (unsigned r = 0; r < n; ++r) {
      p.input[r] = reinterpret_cast<llc_u64>(in[r]->data());
      p.output[r] = reinterpret_cast<llc_u64>(inplace ? in[r]->data() : out[r]->data());
      p.recvBuf[r] = reinterpret_cast<llc_u64>(recv[r]->data());
      p.scratch[r] = reinterpret_cast<llc_u64>(scratch[r]->data());
    }
    p.errorWord = reinterpret_cast<llc_u64>(errorWord.data());
    p.count = count;
    p.timeoutNs = static_cast<llc_u64>(timeoutMs * 1e6);
    p.ll = regions[0];
    p.sentinel = regions[1];
    p.ll128 = regions[2];
    p.plain = regions[3];
    p.nranks = n;
    p.ranksInLaunch = static_cast<llc_u32>(launchRanks.size());
    p.blocksPerRank = blocks;
    for (size_t i = 0; i < launchRanks.size(); ++i) p.launchRanks[i] = static_cast<llc_u8>(launchRanks[i]);
    if (twoGroups) {
      LlcommAllReduceParams q = p;
      if (oddNow) {
        q.count = oddCount;
        q.blocksPerRank = oddBlocks;
      }
      const unsigned qBlocks = q.blocksPerRank;
      const KernelFn qFn = oddNow ? oddFn : callFn;
      q.ranksInLaunch = 1;
      q.launchRanks[0] = static_cast<llc_u8>(oddRank);
      if (splitError) q.errorWord = reinterpret_cast<llc_u64>(oddErrorWord.data());
      blockDim.x = threads;
      gridDim.x = std::max(p.ranksInLaunch * blocks, qBlocks);
      std::thread others([&] { emuLaunch(callFn, p, p.ranksInLaunch * blocks + kSigBlocks, threads, false); });
      if (oddNow && oddDelayMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(oddDelayMs));
      emuLaunch(qFn, q, qBlocks + kSigBlocks, threads, false);
      others.join();
      if (!oddContinue) break; // a mismatch run: one call, checked by the error word
      afterOdd = true;
      continue; // the results of the odd call and after it are not checked
    }
    emuLaunch(callFn, p, p.ranksInLaunch * blocks + kSigBlocks, threads);
    if (afterOdd) continue; // after the odd call: not checked (unspecified after a mismatch)
    if (absent >= 0) break; // a timeout run: one call, checked below
    for (unsigned ch = 0; ch < blocks; ++ch) {
      const unsigned long long per = ((count + blocks - 1) / blocks + (16 / eb) - 1) / (16 / eb) * (16 / eb);
      if (per * ch < count) expectedEpoch[ch] = LlcChannel::nextEpoch(expectedEpoch[ch]); // the kernels' own rule
    }
    for (unsigned long long i = 0; i < count; ++i) {
      double ref = 0;
      bool nan = false;
      for (unsigned r = 0; r < n; ++r) {
        if (inBits[r][i] == sentinelElem) nan = true;
        ref += toDouble(dt, inBits[r][i]);
      }
      llc_u32 first = 0;
      for (size_t k = 0; k < launchRanks.size(); ++k) {
        const unsigned r = launchRanks[k];
        llc_u32 got = 0;
        std::memcpy(&got, (inplace ? in[r] : out[r])->data() + i * eb, eb);
        if (k == 0) first = got;
        else if (got != first) crossRank++;
        const double g = toDouble(dt, got);
        const bool ok = nan ? std::isnan(g) : got == fromDouble(dt, ref);
        if (nan) nanChecked++;
        if (!ok) {
          if (mismatches == 0) {
            char buf[200];
            std::snprintf(buf, sizeof buf, "call %d rank %u element %llu: got %g (0x%x) want %g", c - 15, r, i, g, got, ref);
            firstMismatch = buf;
          }
          mismatches++;
        }
      }
    }
    for (unsigned r = 0; r < n; ++r)
      if (!in[r]->guardIntact() || (out[r] && !out[r]->guardIntact())) {
        std::printf("{\"ok\":false,\"reason\":\"input/output guard overwritten at call %d\"}\n", c - 15);
        return 0;
      }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  LlcommErrorWord ew, oew;
  std::memcpy(&ew, errorWord.data(), sizeof ew);
  std::memcpy(&oew, oddErrorWord.data(), sizeof oew);
  long notArmed = 0, notZero = 0, badEpochs = 0, guards = 0;
  for (unsigned r = 0; r < n; ++r) {
    const unsigned char* b = recv[r]->data();
    for (size_t i = 0; i < LLCOMM_MAX_CHANNELS * 2 * regions[1].channelHalfBytes; ++i)
      if (b[regions[1].offset + i] != 0xFF) notArmed++;
    for (size_t i = 0; i < LLCOMM_MAX_CHANNELS * 2 * regions[2].channelHalfBytes; ++i)
      if (b[regions[2].offset + i] != 0) notZero++;
    if (!recv[r]->guardIntact() || !scratch[r]->guardIntact()) guards++;
    if (absent < 0)
      for (unsigned ch = 0; ch < LLCOMM_MAX_CHANNELS; ++ch) {
        llc_u32 e;
        std::memcpy(&e, scratch[r]->data() + LLCOMM_SCRATCH_EPOCHS_OFFSET + 4 * ch, 4);
        if (e != expectedEpoch[ch]) badEpochs++;
      }
  }
  if (std::getenv("LLCOMM_EMU_DUMP_SIGNATURES")) {
    // After every launch joined: every store of the kernels is visible to this thread (thread join).
    std::printf("{\"signatureRegions\":[");
    for (unsigned r = 0; r < n; ++r) {
      const unsigned char* sig = scratch[r]->data() + LLCOMM_SCRATCH_SIGNATURE_OFFSET;
      std::printf("%s\"", r == 0 ? "" : ",");
      for (size_t i = 0; i < LLCOMM_SCRATCH_SIGNATURE_BYTES / 4; ++i) {
        llc_u32 w;
        std::memcpy(&w, sig + 4 * i, 4);
        std::printf("%08x", w);
      }
      std::printf("\"");
    }
    // Every rank's channel epoch words (the host's check of each channel's last launch reads them with the packets).
    std::printf("],\"epochWords\":[");
    for (unsigned r = 0; r < n; ++r) {
      std::printf("%s[", r == 0 ? "" : ",");
      for (unsigned ch = 0; ch < LLCOMM_MAX_CHANNELS; ++ch) {
        llc_u32 e;
        std::memcpy(&e, scratch[r]->data() + LLCOMM_SCRATCH_EPOCHS_OFFSET + 4 * ch, 4);
        std::printf("%s%u", ch == 0 ? "" : ",", e);
      }
      std::printf("]");
    }
    std::printf("],");
  } else {
    std::printf("{");
  }
  std::printf(
      "\"ok\":%s,\"mismatches\":%ld,\"firstMismatch\":\"%s\",\"crossRankDiffs\":%ld,\"nanChecked\":%ld,"
      "\"sentinelBytesNotArmed\":%ld,\"ll128BytesNotZero\":%ld,\"badEpochs\":%ld,\"guardsBroken\":%ld,"
      "\"error\":{\"code\":%u,\"rank\":%u,\"peer\":%u,\"epoch\":%u,\"what\":%u,\"slot\":%u,\"channel\":%u,"
      "\"reserved\":%u},\"oddError\":{\"code\":%u,\"rank\":%u,\"peer\":%u,\"epoch\":%u,\"what\":%u,"
      "\"slot\":%u,\"channel\":%u,\"reserved\":%u},\"seconds\":%.3f}\n",
      mismatches == 0 && crossRank == 0 && notArmed == 0 && notZero == 0 && badEpochs == 0 && guards == 0 ? "true" : "false",
      mismatches, firstMismatch.c_str(), crossRank, nanChecked, notArmed, notZero, badEpochs, guards, ew.code, ew.rank, ew.peer,
      ew.epoch, ew.what, ew.slot, ew.channel, ew.reserved, oew.code, oew.rank, oew.peer, oew.epoch, oew.what, oew.slot,
      oew.channel, oew.reserved, seconds);
  return 0;
}
