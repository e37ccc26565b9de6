// Runs the fused kernels (kernels/allreduce/fused_rmsnorm_*.cu, rmsnorm.cu, allreduce_many.cu) on emulated ranks
// (host threads, emu.h) and checks them:
//   norm: a sequence of fused AllReduce + residual + RMSNorm calls with fresh data on the same buffers. The residual
//         must equal the float64 reference exactly (the data are exactly representable: multiples of 1/8), the
//         output must be within the dtype's rounding of the float64 RMSNorm, every rank's residual and output must be
//         bitwise equal, and both must be bitwise equal to the unfused composition: the exact AllReduce sum (what
//         every llcomm AllReduce returns for these data) followed by the reference llcomm_rmsnorm_* kernel, run here
//         too. Between calls the sentinel region must be fully re-armed; channel epochs and guard bytes are checked.
//   many: a sequence of allReduceMany calls (several buffers of different sizes in one launch), each checked
//         bitwise against one oneshot-sentinel call per buffer, run here too, and against the exact sum (NaN in ->
//         NaN out for user values equal to the sentinel).
//   norm, per process (LLCOMM_EMU_PER_PROCESS=1; the build with -DLLCOMM_FUSED_SIG_CLUSTER): every rank launched on
//         its own (ranksInLaunch 1, its own error word, all ranks' launches at once), with the signature cluster (grid
//         B + C) and the signature words of LLCOMM_EMU_SIGNATURES ("w0,w1;w0,w1;..." by rank); after each call the
//         same call in process (one launch of every rank, no signature cluster) on copies of the inputs: the
//         per-process residual and output must be bitwise equal to it. LLCOMM_EMU_ODD_RANK with LLCOMM_EMU_ODD_ROWS
//         and/or LLCOMM_EMU_ODD_EPS: that rank's launch has other rows or eps (a mismatched call: one call, then
//         every rank's error word is printed in "rankErrors").
//   many, per process (LLCOMM_EMU_PER_PROCESS=1, the same build and LLCOMM_EMU_SIGNATURES): every rank launched on its
//         own with its own error word and the signature block (grid B + 1), all at once; then the same call in process
//         (no signature block) into fresh outputs: the per-process outputs must be bitwise equal to it (and pass the
//         checks above). LLCOMM_EMU_ODD_RANK with LLCOMM_EMU_ODD_BUFFER and LLCOMM_EMU_ODD_COUNT: that rank's launch
//         has another count for that buffer (a mismatched call: one call, every rank's error word in "rankErrors").
//         A rank whose buffers are all empty launches the signature block alone (blocksPerRank 0, grid 1), as the
//         host does per process (fused-launcher.ts allReduceManyLaunches). LLCOMM_EMU_ODD_ALLREDUCE=1: the odd rank
//         makes a oneshot-sentinel AllReduce of buffer 0 instead (its data block and signature block, its own error
//         word): a many call against an all-reduce call at one signature epoch.
// usage: fused_emulator norm KERNEL DTYPE NRANKS THREADS TIMEOUT_MS RECV_BYTES S_OFF S_HALF ROWS HIDDEN BLOCKS FLAGS
//                       EPS CALLS [LL_OFF LL_HALF CLUSTER: KERNEL split*] [ABSENT_RANK]
//        fused_emulator many DTYPE NRANKS THREADS TIMEOUT_MS RECV_BYTES S_OFF S_HALF BLOCKS CALLS COUNT...
// prints one JSON object.
#include "emu.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

// The float intrinsics of llcomm/rmsnorm.cuh (IEEE single, round to nearest even; rsqrtf is approximate on the GPU,
// here 1/sqrt: every emulated rank and both compositions use the same one, which is what the bitwise checks need).
inline float __fmaf_rn(float a, float b, float c) { return std::fmaf(a, b, c); }
inline float __fmul_rn(float a, float b) {
  volatile float r = a * b;
  return r;
}
inline float __fdiv_rn(float a, float b) {
  volatile float r = a / b;
  return r;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
// f32 -> FP8 e4m3 (cvt.rn.satfinite.e4m3x2.f32): round to nearest even, saturate to +-448, NaN -> 0x7F (sign kept).
inline unsigned emuE4m3FromF32(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  const unsigned sign = (u >> 24) & 0x80u;
  if (std::isnan(f)) return sign | 0x7Fu;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 464.0) return sign | 0x7Eu; // 448 and up to the midpoint to 480 (not a value) round to 448; above saturate
  if (a < std::ldexp(1.0, -6)) return sign | static_cast<unsigned>(std::nearbyint(a * 512.0)); // subnormals (8: 2^-6)
  int e;
  const double m = std::frexp(a, &e); // a = m 2^e, m in [0.5, 1)
  double q = std::nearbyint((m * 2 - 1) * 8);
  int ex = e - 1;
  if (q == 8) {
    q = 0;
    ex++;
  }
  return sign | static_cast<unsigned>(((ex + 7) << 3) | static_cast<int>(q));
}
inline llc_u16 llcE4m3x2FromF32(float lo, float hi) {
  return static_cast<llc_u16>(emuE4m3FromF32(lo) | (emuE4m3FromF32(hi) << 8));
}
static double e4m3ToDouble(unsigned b) {
  const double s = (b & 0x80u) ? -1 : 1;
  const unsigned e = (b >> 3) & 15u, m = b & 7u;
  if (e == 15 && m == 7) return std::nan("");
  if (e == 0) return s * m * std::ldexp(1.0, -9);
  return s * (1 + m / 8.0) * std::ldexp(1.0, static_cast<int>(e) - 7);
}

// Each source expands the instantiation table for its own kernels; the macros are cleared before the next one.
#include "allreduce/oneshot_sentinel.cu"
#include "undef_variants.h"
#include "allreduce/fused_rmsnorm_oneshot.cu"
#include "undef_variants.h"
#include "allreduce/fused_rmsnorm_twoshot.cu"
#include "undef_variants.h"
#include "allreduce/fused_rmsnorm_split.cu"
#include "undef_variants.h"
#include "allreduce/fused_rmsnorm_split_ll.cu"
#include "undef_variants.h"
#include "allreduce/fused_rmsnorm_split_push.cu"
#include "undef_variants.h"
#include "allreduce/fused_rmsnorm_split_ll_push.cu"
#include "undef_variants.h"
#include "allreduce/fused_rmsnorm_split_twoshot.cu"
#include "undef_variants.h"
// The late-residual candidate of the split-ll kernel (fused_split.cuh LLC_SPLIT_LATE_RESIDUAL; on the GPU only in
// allreduce/fused_rmsnorm_split_probe.cu, bf16): kernel "split-ll-late", every dtype; likewise the SPREAD candidates
// ("split-ll-spread", "split-ll-late-spread"; only on the shapes fusedSplitSpreadApplies accepts).
#define LLC_EMU_SPLIT_LL_CANDIDATE(name, bits, dtype)                                                               \
  void llcomm_emu_split_ll_##name##_##dtype(const LlcommFusedNormParams p) {                                       \
    fusedRmsNormSplit<LlcLL16, LLC_DT_##dtype, bits>(p, p.ll);                                                      \
  }
#define LLC_EMU_SPLIT_LL_CANDIDATES(dtype)                                                                          \
  LLC_EMU_SPLIT_LL_CANDIDATE(late, LLC_SPLIT_LATE_RESIDUAL, dtype)                                                  \
  LLC_EMU_SPLIT_LL_CANDIDATE(spread, LLC_SPLIT_SPREAD, dtype)                                                       \
  LLC_EMU_SPLIT_LL_CANDIDATE(late_spread, LLC_SPLIT_LATE_RESIDUAL | LLC_SPLIT_SPREAD, dtype)
LLC_EMU_SPLIT_LL_CANDIDATES(bf16)
LLC_EMU_SPLIT_LL_CANDIDATES(f16)
LLC_EMU_SPLIT_LL_CANDIDATES(f32)
#include "allreduce/rmsnorm.cu"
#include "undef_variants.h"
#include "allreduce/allreduce_many.cu"
#include "undef_variants.h"
#include "emu_harness.h"



static int dtypeOf(const std::string& s) {
  return s == "f32" ? LLCOMM_DTYPE_F32 : s == "f16" ? LLCOMM_DTYPE_F16 : LLCOMM_DTYPE_BF16;
}
static llc_u32 getElem(Buffer& b, size_t eb, size_t i) {
  llc_u32 v = 0;
  std::memcpy(&v, b.data() + i * eb, eb);
  return v;
}
static void setElem(Buffer& b, size_t eb, size_t i, llc_u32 v) { std::memcpy(b.data() + i * eb, &v, eb); }

struct Rig {
  unsigned n;
  size_t recvBytes;
  LlcommRegion sentinel;
  std::vector<std::unique_ptr<Buffer>> recv, scratch;
  Buffer errorWord{sizeof(LlcommErrorWord), 0};
  Rig(unsigned n_, size_t recvBytes_, LlcommRegion s) : n(n_), recvBytes(recvBytes_), sentinel(s) {
    for (unsigned r = 0; r < n; ++r) {
      recv.push_back(std::make_unique<Buffer>(recvBytes, 0x5A));
      std::memset(recv.back()->data() + s.offset, 0xFF, LLCOMM_MAX_CHANNELS * 2 * s.channelHalfBytes);
      scratch.push_back(std::make_unique<Buffer>(LLCOMM_SCRATCH_BYTES, 0));
    }
  }
  long notArmed() {
    long bad = 0;
    for (unsigned r = 0; r < n; ++r)
      for (size_t i = 0; i < LLCOMM_MAX_CHANNELS * 2 * sentinel.channelHalfBytes; ++i)
        if (recv[r]->data()[sentinel.offset + i] != 0xFF) bad++;
    return bad;
  }
  long guardsBroken() {
    long bad = 0;
    for (unsigned r = 0; r < n; ++r)
      if (!recv[r]->guardIntact() || !scratch[r]->guardIntact()) bad++;
    return bad;
  }
  llc_u32 epoch(unsigned r, unsigned ch) {
    llc_u32 e;
    std::memcpy(&e, scratch[r]->data() + LLCOMM_SCRATCH_EPOCHS_OFFSET + 4 * ch, 4);
    return e;
  }
  // One oneshot-sentinel AllReduce of `count` elements, one block a rank (the callers keep it within one lane):
  // input[r] -> output[r], on this rig's buffers (channel 0 steps its epoch).
  template <class OneFnT>
  void oneshotSentinel(OneFnT one, const std::vector<llc_u64>& input, const std::vector<llc_u64>& output, size_t count,
                       llc_u64 timeoutNs, unsigned threads) {
    LlcommAllReduceParams q;
    std::memset(&q, 0, sizeof q);
    for (unsigned r = 0; r < n; ++r) {
      q.input[r] = input[r];
      q.output[r] = output[r];
      q.recvBuf[r] = recv[r]->addr();
      q.scratch[r] = scratch[r]->addr();
      q.launchRanks[r] = static_cast<llc_u8>(r);
    }
    q.errorWord = errorWord.addr();
    q.count = count;
    q.timeoutNs = timeoutNs;
    q.sentinel = sentinel;
    q.nranks = n;
    q.ranksInLaunch = n;
    q.blocksPerRank = 1;
    emuLaunch(one, q, n, threads);
  }
  LlcommErrorWord error() {
    LlcommErrorWord ew;
    std::memcpy(&ew, errorWord.data(), sizeof ew);
    return ew;
  }
};

static std::string jsonError(const LlcommErrorWord& ew) {
  char b[200];
  std::snprintf(b, sizeof b,
                "{\"code\":%u,\"rank\":%u,\"peer\":%u,\"epoch\":%u,\"what\":%u,\"slot\":%u,\"channel\":%u,\"reserved\":%u}",
                ew.code, ew.rank, ew.peer, ew.epoch, ew.what, ew.slot, ew.channel, ew.reserved);
  return b;
}

// The per-process runs' environment (header): the signature words by rank ("w0,w1;w0,w1;..."), and integers.
static std::vector<std::pair<llc_u32, llc_u32>> signaturesFromEnv() {
  std::vector<std::pair<llc_u32, llc_u32>> signatures;
  if (const char* sigEnv = std::getenv("LLCOMM_EMU_SIGNATURES")) {
    for (const char* q = sigEnv; *q != '\0';) {
      char* end = nullptr;
      const llc_u32 w0 = static_cast<llc_u32>(std::strtoul(q, &end, 10));
      const llc_u32 w1 = static_cast<llc_u32>(std::strtoul(end + 1, &end, 10));
      signatures.emplace_back(w0, w1);
      q = *end == ';' ? end + 1 : end;
    }
  }
  return signatures;
}
static int envInt(const char* name, int fallback) { return std::getenv(name) ? std::atoi(std::getenv(name)) : fallback; }
static bool envOn(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] == '1';
}
// Every rank's error word and its signature epoch word (one step per per-process launch), as JSON arrays.
static std::string rankErrorsJson(const std::vector<std::unique_ptr<Buffer>>& rankErrors) {
  std::string out = "[";
  for (size_t r = 0; r < rankErrors.size(); ++r) {
    LlcommErrorWord ew;
    std::memcpy(&ew, rankErrors[r]->data(), sizeof ew);
    out += (r ? "," : "") + jsonError(ew);
  }
  return out + "]";
}
static std::string sigEpochsJson(Rig& rig) {
  std::string out = "[";
  for (unsigned r = 0; r < rig.n; ++r) {
    llc_u32 e;
    std::memcpy(&e, rig.scratch[r]->data() + LLCOMM_SCRATCH_EPOCHS_OFFSET + 4 * LLCOMM_SIG_BLOCK_EPOCH_WORD, 4);
    out += (r ? "," : "") + std::to_string(e);
  }
  return out + "]";
}

// A per-process run's launch of rank r alone: ranksInLaunch 1, its own error word and signature words.
template <class Params>
static Params ownLaunch(const Params& p, unsigned r, llc_u64 errorWord, std::pair<llc_u32, llc_u32> signature) {
  Params pr = p;
  pr.ranksInLaunch = 1;
  std::memset(pr.launchRanks, 0, sizeof pr.launchRanks);
  pr.launchRanks[0] = static_cast<llc_u8>(r);
  pr.errorWord = errorWord;
  pr.signature[0] = signature.first;
  pr.signature[1] = signature.second;
  return pr;
}

using NormFn = void (*)(const LlcommFusedNormParams);
using OneFn = void (*)(const LlcommAllReduceParams);
// The oneshot-sentinel AllReduce kernel of dtype dt (the reference the adversarial and allReduceMany runs compare with).
static OneFn oneshotSentinelKernel(int dt) {
  return dt == LLCOMM_DTYPE_F32   ? &llcomm_oneshot_sentinel_sentinel_f32_sum
         : dt == LLCOMM_DTYPE_F16 ? &llcomm_oneshot_sentinel_sentinel_f16_sum
                                  : &llcomm_oneshot_sentinel_sentinel_bf16_sum;
}
template <int DT>
static void normKernels(const std::string& kernel, NormFn& fused, NormFn& reference) {
#define LLC_EMU_PICK(dt)                                                                                             \
  fused = kernel == "oneshot"    ? &llcomm_fused_rmsnorm_oneshot_##dt                                                \
          : kernel == "twoshot"  ? &llcomm_fused_rmsnorm_twoshot_##dt                                                \
          : kernel == "split"    ? &llcomm_fused_rmsnorm_split_##dt                                                  \
          : kernel == "split-ll" ? &llcomm_fused_rmsnorm_split_ll_##dt                                               \
          : kernel == "split-push" ? &llcomm_fused_rmsnorm_split_push_##dt                                           \
          : kernel == "split-ll-push" ? &llcomm_fused_rmsnorm_split_ll_push_##dt                                     \
          : kernel == "split-twoshot" ? &llcomm_fused_rmsnorm_split_twoshot_##dt                                     \
          : kernel == "split-ll-late" ? &llcomm_emu_split_ll_late_##dt                                              \
          : kernel == "split-ll-spread" ? &llcomm_emu_split_ll_spread_##dt                                          \
          : kernel == "split-ll-late-spread" ? &llcomm_emu_split_ll_late_spread_##dt                                \
                                 : nullptr;                                                                         \
  reference = &llcomm_rmsnorm_##dt;
  if constexpr (DT == LLCOMM_DTYPE_F32) {
    LLC_EMU_PICK(f32)
  } else if constexpr (DT == LLCOMM_DTYPE_F16) {
    LLC_EMU_PICK(f16)
  } else {
    LLC_EMU_PICK(bf16)
  }
#undef LLC_EMU_PICK
}

static int runNorm(int argc, char** argv) {
  if (argc < 16) return 2;
  const std::string kernel = argv[2];
  const int dt = dtypeOf(argv[3]);
  const unsigned n = std::atoi(argv[4]), threads = std::atoi(argv[5]);
  const double timeoutMs = std::atof(argv[6]);
  const size_t recvBytes = std::strtoull(argv[7], nullptr, 10);
  LlcommRegion s{std::strtoull(argv[8], nullptr, 10), std::strtoull(argv[9], nullptr, 10)};
  const unsigned rows = std::atoi(argv[10]), hidden = std::atoi(argv[11]), blocks = std::atoi(argv[12]);
  const unsigned flags = std::atoi(argv[13]);
  const float eps = static_cast<float>(std::atof(argv[14]));
  const int calls = std::atoi(argv[15]);
  // The split kernels: LL_OFF LL_HALF CLUSTER follow CALLS (the LL region, zero-filled; blocks per cluster).
  const bool split = kernel.rfind("split", 0) == 0; // split, split-ll, split-twoshot and the split-ll candidates
  if (split && argc < 19) return 2;
  LlcommRegion ll{0, 0};
  unsigned cluster = 1;
  if (split) {
    ll = {std::strtoull(argv[16], nullptr, 10), std::strtoull(argv[17], nullptr, 10)};
    cluster = std::atoi(argv[18]);
  }
  const int absentArg = split ? 19 : 16;
  const int absent = argc > absentArg ? std::atoi(argv[absentArg]) : -1;
  // LLCOMM_EMU_EXPECT_NOOP=1: a launch the kernel must refuse (the push kernels on a shape the host never sends:
  // fused_split.cuh returns before anything): every call must leave the residual, the output (0xCD), the channel
  // epochs and the receive buffers as they were, with no wait timing out. Counted in `written` and `badEpochs`.
  const char* noopEnv = std::getenv("LLCOMM_EMU_EXPECT_NOOP");
  const bool expectNoop = noopEnv != nullptr && noopEnv[0] == '1';
  // LLCOMM_EMU_ADVERSARIAL=1: row 0 of x also holds the values the protocols must carry untouched (the sentinel's
  // bits, NaN, +-Inf, -0, the smallest subnormal, the largest finite value: element i by i % 53, on chosen ranks), so
  // its sums are NaN, +-Inf, overflow or absorb a subnormal. The unfused composition is then the emulated
  // oneshot-sentinel AllReduce (one block, one lane: the rank-order f32 sum every llcomm AllReduce gives, from the
  // same canonicalized bits) into the reference kernel, and the residual's reference is its output plus the residual
  // in f32, rounded to the residual's dtype, as the kernels add; non-finite values are compared by class (NaN, +Inf, -Inf), and the output's
  // tolerance is checked on rows whose residual is finite. Every rank bitwise equal and bitwise equal to the unfused
  // composition, as everywhere.
  const char* advEnv = std::getenv("LLCOMM_EMU_ADVERSARIAL");
  const bool adversarial = advEnv != nullptr && advEnv[0] == '1';
  // The per-process runs (header): signature words by rank, and the odd rank's differing fields.
  const bool perProcess = envOn("LLCOMM_EMU_PER_PROCESS");
  const std::vector<std::pair<llc_u32, llc_u32>> signatures = signaturesFromEnv();
  const int oddRank = envInt("LLCOMM_EMU_ODD_RANK", -1);
  const unsigned oddRows = std::getenv("LLCOMM_EMU_ODD_ROWS") ? std::atoi(std::getenv("LLCOMM_EMU_ODD_ROWS")) : 0;
  const float oddEps = std::getenv("LLCOMM_EMU_ODD_EPS") ? static_cast<float>(std::atof(std::getenv("LLCOMM_EMU_ODD_EPS"))) : 0.0f;
#if !defined(LLCOMM_FUSED_SIG_CLUSTER)
  if (perProcess) return 2; // the kernels of this build have no signature cluster
#endif
  NormFn fused = nullptr, reference = nullptr;
  if (dt == LLCOMM_DTYPE_F32) normKernels<LLCOMM_DTYPE_F32>(kernel, fused, reference);
  else if (dt == LLCOMM_DTYPE_F16) normKernels<LLCOMM_DTYPE_F16>(kernel, fused, reference);
  else normKernels<LLCOMM_DTYPE_BF16>(kernel, fused, reference);
  if (!fused || cluster < 1 || blocks % cluster != 0) return 2;
  const size_t eb = dt == LLCOMM_DTYPE_F32 ? 4 : 2;
  const bool resF32 = (flags & LLCOMM_FUSED_RESIDUAL_F32) != 0;
  const bool noResidualIn = (flags & LLCOMM_FUSED_NO_RESIDUAL_IN) != 0;
  const bool e4m3 = (flags & LLCOMM_FUSED_OUT_E4M3) != 0;
  const float outScale = 4.0f; // per-tensor scale of an e4m3 output (spreads the values over its range)
  const size_t oeb = e4m3 ? 1 : eb;
  const size_t reb = resF32 ? 4 : eb;
  const size_t elems = static_cast<size_t>(rows) * hidden;
  if (adversarial && (expectNoop || elems * eb > s.channelHalfBytes / n / 16u * 16u)) return 2; // one lane
  const OneFn one = oneshotSentinelKernel(dt);
  // the adversarial bit patterns of x's dtype
  const bool f32 = dt == LLCOMM_DTYPE_F32;
  const llc_u32 sentinelBits = f32 ? 0xFFFFFFFFu : 0xFFFFu, nanBits = f32 ? 0x7FC00001u : dt == LLCOMM_DTYPE_F16 ? 0x7E01u : 0x7FC1u;
  const llc_u32 posInf = f32 ? 0x7F800000u : dt == LLCOMM_DTYPE_F16 ? 0x7C00u : 0x7F80u;
  const llc_u32 negZero = f32 ? 0x80000000u : 0x8000u, tiny = 1u;
  const llc_u32 maxFinite = f32 ? 0x7F7FFFFFu : dt == LLCOMM_DTYPE_F16 ? 0x7BFFu : 0x7F7Fu;
  // element i of row 0 on rank r: the special bits, or 0 (keep the generated value)
  const auto special = [&](unsigned r, unsigned i) -> llc_u32 {
    switch (i % 53) {
      case 7: return r == n - 1 ? sentinelBits : 0u;    // the sentinel's bits as data: NaN out
      case 11: return r == 0 ? posInf : 0u;              // +Inf
      case 13: return r == 0 ? posInf : r == 1 ? (posInf | (f32 ? 0x80000000u : 0x8000u)) : 0u; // +Inf + -Inf: NaN
      case 17: return negZero;                           // -0 everywhere: the sum is -0
      case 19: return tiny;                              // subnormals, absorbed or kept
      case 23: return r == n / 2 ? nanBits : 0u;         // a NaN with a payload
      case 29: return maxFinite;                         // overflows to +Inf in the dtype (f32: +Inf in f32 too)
      default: return 0u;
    }
  };
  Rig rig(n, recvBytes, s);
  if (perProcess && (signatures.size() != n || absent >= 0 || adversarial || expectNoop)) return 2;
  std::vector<std::unique_ptr<Buffer>> rankErrors; // per process: each rank's own error word
  for (unsigned r = 0; r < n; ++r) rankErrors.push_back(std::make_unique<Buffer>(sizeof(LlcommErrorWord), 0));
  long vsInProcess = 0; // per process: residual and output bytes that differ from the in-process call's
  if (split)
    for (unsigned r = 0; r < n; ++r) std::memset(rig.recv[r]->data() + ll.offset, 0, LLCOMM_MAX_CHANNELS * 2 * ll.channelHalfBytes);
  std::vector<unsigned> launchRanks;
  for (unsigned r = 0; r < n; ++r)
    if (static_cast<int>(r) != absent) launchRanks.push_back(r);
  std::mt19937 rng(4242);
  auto eighths = [&](int k) { return (static_cast<int>(rng() % (2 * k + 1)) - k) / 8.0; };
  long residualMismatch = 0, outOff = 0, crossRank = 0, vsUnfused = 0, armed = 0, guards = 0, badEpochs = 0;
  long written = 0; // expectNoop: bytes of residual or output that changed
  long nonFinite = 0; // adversarial: residual elements (all ranks) whose reference is NaN or +-Inf
  double worstRel = 0;
  std::string first;
  std::vector<unsigned> expectedEpoch(LLCOMM_MAX_CHANNELS, 0);
  const auto t0 = std::chrono::steady_clock::now();
  for (int c = 0; c < calls; ++c) {
    std::vector<std::unique_ptr<Buffer>> x, res, out, weight, resRef, outRef;
    Buffer sum(elems * eb, 0);
    std::vector<double> sumD(elems, 0), resIn(elems);
    for (size_t i = 0; i < elems; ++i) resIn[i] = eighths(32);
    std::vector<double> w(hidden);
    for (unsigned i = 0; i < hidden; ++i) w[i] = eighths(16);
    for (unsigned r = 0; r < n; ++r) {
      x.push_back(std::make_unique<Buffer>(elems * eb, 0));
      res.push_back(std::make_unique<Buffer>(elems * reb, 0));
      resRef.push_back(std::make_unique<Buffer>(elems * reb, 0));
      out.push_back(std::make_unique<Buffer>(elems * eb, 0xCD));
      outRef.push_back(std::make_unique<Buffer>(elems * eb, 0xCD));
      weight.push_back(std::make_unique<Buffer>(hidden * eb, 0));
      for (size_t i = 0; i < elems; ++i) {
        const double v = eighths(8); // |partial sums| <= 8 n: exact in every dtype for n <= 16
        sumD[i] += v;
        const llc_u32 adv = adversarial && i < hidden ? special(r, static_cast<unsigned>(i)) : 0u;
        setElem(*x[r], eb, i, adv != 0u ? adv : fromDouble(dt, v));
        const llc_u32 rb = resF32 ? __float_as_uint(static_cast<float>(resIn[i])) : fromDouble(dt, resIn[i]);
        setElem(*res[r], reb, i, rb);
        setElem(*resRef[r], reb, i, rb);
      }
      for (unsigned i = 0; i < hidden; ++i) setElem(*weight[r], eb, i, fromDouble(dt, w[i]));
    }
    for (size_t i = 0; i < elems; ++i) setElem(sum, eb, i, fromDouble(dt, sumD[i]));
    std::vector<std::unique_ptr<Buffer>> arOut; // adversarial: the emulated oneshot-sentinel's output per rank
    LlcommFusedNormParams p;
    std::memset(&p, 0, sizeof p);
    for (unsigned r = 0; r < n; ++r) {
      p.input[r] = x[r]->addr();
      p.residual[r] = res[r]->addr();
      p.out[r] = out[r]->addr();
      p.weight[r] = weight[r]->addr();
      p.recvBuf[r] = rig.recv[r]->addr();
      p.scratch[r] = rig.scratch[r]->addr();
    }
    p.errorWord = rig.errorWord.addr();
    p.timeoutNs = static_cast<llc_u64>(timeoutMs * 1e6);
    p.sentinel = s;
    p.ll = ll;
    p.rows = rows;
    p.hidden = hidden;
    p.epsBits = __float_as_uint(eps);
    p.flags = flags;
    p.outScaleBits = __float_as_uint(outScale);
    p.nranks = n;
    p.ranksInLaunch = static_cast<llc_u32>(launchRanks.size());
    p.blocksPerRank = blocks;
    for (size_t i = 0; i < launchRanks.size(); ++i) p.launchRanks[i] = static_cast<llc_u8>(launchRanks[i]);
    std::vector<std::unique_ptr<Buffer>> resInP, outInP; // per process: the in-process call's residual and output
    if (perProcess) {
      // Every rank's own launch, all at once (as processes would): ranksInLaunch 1, its own error word and signature
      // words, the signature cluster after its data blocks.
      blockDim.x = threads;
      gridDim.x = blocks + cluster;
      emuClusterSize = cluster;
      std::vector<std::thread> ranks;
      for (unsigned r : launchRanks) {
        LlcommFusedNormParams pr = ownLaunch(p, r, rankErrors[r]->addr(), signatures[r]);
        if (static_cast<int>(r) == oddRank) {
          if (oddRows != 0) pr.rows = oddRows;
          if (oddEps != 0.0f) pr.epsBits = __float_as_uint(oddEps);
        }
        ranks.emplace_back([&, pr] { emuLaunch(fused, pr, blocks + cluster, threads, false, cluster); });
      }
      for (auto& th : ranks) th.join();
      emuClusterSize = 1;
      if (oddRank >= 0) break; // a mismatched call: one call, every rank's error word is printed
      // The same call in process on copies of the inputs (the residual as before the call, the output unwritten).
      LlcommFusedNormParams q = p;
      for (unsigned r = 0; r < n; ++r) {
        resInP.push_back(std::make_unique<Buffer>(elems * reb, 0));
        std::memcpy(resInP.back()->data(), resRef[r]->data(), elems * reb);
        outInP.push_back(std::make_unique<Buffer>(elems * oeb, 0xCD));
        q.residual[r] = resInP[r]->addr();
        q.out[r] = outInP[r]->addr();
      }
      emuLaunch(fused, q, q.ranksInLaunch * blocks, threads, true, cluster);
      for (unsigned r : launchRanks) {
        for (size_t i = 0; i < elems * reb; ++i) vsInProcess += res[r]->data()[i] != resInP[r]->data()[i];
        for (size_t i = 0; i < elems * oeb; ++i) vsInProcess += out[r]->data()[i] != outInP[r]->data()[i];
        if (!resInP[r]->guardIntact() || !outInP[r]->guardIntact()) guards++;
      }
    } else {
      emuLaunch(fused, p, p.ranksInLaunch * blocks, threads, true, cluster);
    }
    if (absent >= 0) break; // a timeout run: one call, the error word is checked by the caller
    if (expectNoop) {
      for (unsigned r = 0; r < n; ++r) {
        for (size_t i = 0; i < elems * reb; ++i) written += res[r]->data()[i] != resRef[r]->data()[i];
        for (size_t i = 0; i < elems * eb; ++i) written += out[r]->data()[i] != 0xCD;
        if (!x[r]->guardIntact() || !res[r]->guardIntact() || !out[r]->guardIntact()) guards++;
      }
      if (split)
        for (unsigned r = 0; r < n; ++r)
          for (size_t i = 0; i < LLCOMM_MAX_CHANNELS * 2 * ll.channelHalfBytes; ++i)
            written += rig.recv[r]->data()[ll.offset + i] != 0; // the LL region as zero-filled above
      armed += rig.notArmed();
      continue; // no epoch steps (expectedEpoch stays 0), no reference to compare with
    }
    // A channel steps its epoch when its block (split: its cluster, channel / cluster) has rows.
    const unsigned groups = blocks / cluster;
    for (unsigned ch = 0; ch < blocks; ++ch)
      if (static_cast<unsigned long long>((rows + groups - 1) / groups) * (ch / cluster) < rows)
        expectedEpoch[ch] += perProcess ? 2 : 1; // per process: the per-process launches and the in-process one
    // adversarial: the AllReduce (one block: channel 0 steps once more) on the same rig, each rank's output its own
    if (adversarial) {
      std::vector<llc_u64> ins, outs;
      for (unsigned r = 0; r < n; ++r) {
        arOut.push_back(std::make_unique<Buffer>(elems * eb, 0xCD));
        ins.push_back(x[r]->addr());
        outs.push_back(arOut[r]->addr());
      }
      rig.oneshotSentinel(one, ins, outs, elems, p.timeoutNs, threads);
      expectedEpoch[0]++;
    }
    // The unfused composition: the AllReduce's output (the exact sum; adversarial: the emulated AllReduce's) into the
    // reference kernel.
    LlcommFusedNormParams q = p;
    for (unsigned r = 0; r < n; ++r) {
      q.input[r] = adversarial ? arOut[r]->addr() : sum.addr();
      q.residual[r] = resRef[r]->addr();
      q.out[r] = outRef[r]->addr();
    }
    emuLaunch(reference, q, q.ranksInLaunch * rows, threads);
    const double tol = e4m3 ? 0.07 : dt == LLCOMM_DTYPE_F32 ? 1e-5 : dt == LLCOMM_DTYPE_F16 ? 2e-3 : 1.6e-2;
    for (unsigned row = 0; row < rows; ++row) {
      std::vector<double> rD(hidden);
      double sq = 0;
      for (unsigned i = 0; i < hidden; ++i) {
        const size_t k = static_cast<size_t>(row) * hidden + i;
        // adversarial: the AllReduce's element (a dtype value: the rank-order f32 sum rounded once), plus the
        // residual in f32 (as the kernels add), rounded to the residual's dtype
        const double s0 = adversarial ? toDouble(dt, getElem(*arOut[0], eb, k)) : toDouble(dt, fromDouble(dt, sumD[k]));
        rD[i] = adversarial ? static_cast<double>(static_cast<float>(noResidualIn ? 0.0 : resIn[k]) + static_cast<float>(s0))
                            : (noResidualIn ? 0.0 : resIn[k]) + s0;
        if (!resF32) rD[i] = toDouble(dt, fromDouble(dt, rD[i]));
        sq += rD[i] * rD[i];
      }
      const bool finiteRow = std::isfinite(sq);
      const double inv = 1.0 / std::sqrt(sq / hidden + eps);
      for (unsigned i = 0; i < hidden; ++i) {
        const size_t k = static_cast<size_t>(row) * hidden + i;
        double want = rD[i] * inv * toDouble(dt, fromDouble(dt, w[i]));
        if (e4m3) want = std::max(-448.0, std::min(448.0, want * outScale));
        const llc_u32 r0 = getElem(*res[launchRanks[0]], reb, k), o0 = getElem(*out[launchRanks[0]], oeb, k);
        for (unsigned r : launchRanks) {
          const llc_u32 rb = getElem(*res[r], reb, k), ob = getElem(*out[r], oeb, k);
          if (rb != r0 || ob != o0) crossRank++;
          // adversarial: a NaN against a NaN of another payload is equal here. The host's f32 arithmetic keeps a NaN
          // operand's payload, so the sentinel's bits (canonicalized by the sentinel protocols, carried as they are by
          // LL16) give the fused LL16 kernels and the sentinel AllReduce different NaNs here. On the GPU the bits are
          // equal (its f32 arithmetic returns the canonical NaN): the GPU test compares them bit for bit, 90 of 90
          // equal on an H100 (bench/results/gpu-test-h100-2026-12-07-cafaefe-fused-adversarial.json.gz).
          const llc_u32 rr = getElem(*resRef[r], reb, k), orf = getElem(*outRef[r], oeb, k);
          const auto nanR = [&](llc_u32 v) { return std::isnan(resF32 ? __uint_as_float(v) : toDouble(dt, v)); };
          const auto nanO = [&](llc_u32 v) { return std::isnan(e4m3 ? e4m3ToDouble(v) : toDouble(dt, v)); };
          const bool sameRes = rb == rr || (adversarial && nanR(rb) && nanR(rr));
          const bool sameOut = ob == orf || (adversarial && nanO(ob) && nanO(orf));
          if (!sameRes || !sameOut) vsUnfused++;
          const double gotR = resF32 ? __uint_as_float(rb) : toDouble(dt, rb);
          const bool sameR = std::isnan(rD[i]) ? std::isnan(gotR) : gotR == rD[i]; // +-Inf compare equal to themselves
          if (!std::isfinite(rD[i])) nonFinite++;
          if (!sameR) {
            if (residualMismatch++ == 0) {
              char b[200];
              std::snprintf(b, sizeof b, "call %d rank %u row %u elem %u: residual %g want %g", c, r, row, i, gotR, rD[i]);
              first = b;
            }
          }
          const double got = e4m3 ? e4m3ToDouble(ob) : toDouble(dt, ob);
          // e4m3: half a step of a 3-bit mantissa (1/16 relative), 2^-10 absolute in the subnormal range
          const double rel = std::fabs(got - want) / std::max(std::fabs(want), e4m3 ? 1.0 / 64 : 1e-3);
          worstRel = std::max(worstRel, rel);
          if (finiteRow && !(rel <= tol)) {
            if (outOff++ == 0 && first.empty()) {
              char b[200];
              std::snprintf(b, sizeof b, "call %d rank %u row %u elem %u: out %g want %g", c, r, row, i, got, want);
              first = b;
            }
          }
        }
      }
    }
    for (unsigned r = 0; r < n; ++r)
      if (!x[r]->guardIntact() || !res[r]->guardIntact() || !out[r]->guardIntact() || !resRef[r]->guardIntact() ||
          !outRef[r]->guardIntact())
        guards++;
    armed += rig.notArmed();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (absent < 0 && oddRank < 0)
    for (unsigned r = 0; r < n; ++r)
      for (unsigned ch = 0; ch < LLCOMM_MAX_CHANNELS; ++ch)
        if (rig.epoch(r, ch) != expectedEpoch[ch]) badEpochs++;
  guards += rig.guardsBroken();
  const bool ok = residualMismatch == 0 && outOff == 0 && crossRank == 0 && vsUnfused == 0 && armed == 0 &&
                  guards == 0 && badEpochs == 0 && written == 0 && vsInProcess == 0;
  std::printf("{\"ok\":%s,\"written\":%ld,\"nonFinite\":%ld,\"residualMismatches\":%ld,\"outOutOfTolerance\":%ld,\"worstRelError\":%.3g,"
              "\"crossRankDiffs\":%ld,\"diffsVsUnfused\":%ld,\"sentinelBytesNotArmed\":%ld,\"guardsBroken\":%ld,"
              "\"badEpochs\":%ld,\"first\":\"%s\",\"error\":%s,\"seconds\":%.3f,\"diffsVsInProcess\":%ld,"
              "\"rankErrors\":%s,\"sigEpochs\":%s}\n",
              ok ? "true" : "false", written, nonFinite, residualMismatch, outOff, worstRel, crossRank, vsUnfused, armed, guards, badEpochs,
              first.c_str(), jsonError(rig.error()).c_str(), seconds, vsInProcess, rankErrorsJson(rankErrors).c_str(),
              sigEpochsJson(rig).c_str());
  return 0;
}

using ManyFn = void (*)(const LlcommAllReduceManyParams);

static int runMany(int argc, char** argv) {
  if (argc < 12) return 2;
  const int dt = dtypeOf(argv[2]);
  const unsigned n = std::atoi(argv[3]), threads = std::atoi(argv[4]);
  const double timeoutMs = std::atof(argv[5]);
  const size_t recvBytes = std::strtoull(argv[6], nullptr, 10);
  LlcommRegion s{std::strtoull(argv[7], nullptr, 10), std::strtoull(argv[8], nullptr, 10)};
  const unsigned blocks = std::atoi(argv[9]);
  const int calls = std::atoi(argv[10]);
  std::vector<size_t> counts;
  for (int i = 11; i < argc; ++i) counts.push_back(std::strtoull(argv[i], nullptr, 10));
  if (counts.empty() || counts.size() > LLCOMM_MANY_MAX_BUFFERS) return 2;
  ManyFn many = dt == LLCOMM_DTYPE_F32   ? &llcomm_allreduce_many_f32
                : dt == LLCOMM_DTYPE_F16 ? &llcomm_allreduce_many_f16
                                         : &llcomm_allreduce_many_bf16;
  const OneFn one = oneshotSentinelKernel(dt);
  const size_t eb = dt == LLCOMM_DTYPE_F32 ? 4 : 2;
  const llc_u32 sentinelElem = dt == LLCOMM_DTYPE_F32 ? 0xFFFFFFFFu : 0xFFFFu;
  // The per-process runs (header): signature words by rank, and the odd rank's other count for one buffer.
  const bool perProcess = envOn("LLCOMM_EMU_PER_PROCESS");
  const std::vector<std::pair<llc_u32, llc_u32>> signatures = signaturesFromEnv();
  const int oddRank = envInt("LLCOMM_EMU_ODD_RANK", -1), oddBuffer = envInt("LLCOMM_EMU_ODD_BUFFER", 0);
  const int oddCount = envInt("LLCOMM_EMU_ODD_COUNT", -1);
  // LLCOMM_EMU_ODD_ALLREDUCE=1: the odd rank's launch is an AllReduce (oneshot-sentinel) instead (header).
  const bool oddAllReduce = envOn("LLCOMM_EMU_ODD_ALLREDUCE");
#if !defined(LLCOMM_FUSED_SIG_CLUSTER)
  if (perProcess) return 2; // the kernels of this build have no signature block
#endif
  if (perProcess && (signatures.size() != n || oddBuffer < 0 || static_cast<size_t>(oddBuffer) >= counts.size()))
    return 2;
  Rig rig(n, recvBytes, s);
  std::vector<std::unique_ptr<Buffer>> rankErrors; // per process: each rank's own error word
  for (unsigned r = 0; r < n; ++r) rankErrors.push_back(std::make_unique<Buffer>(sizeof(LlcommErrorWord), 0));
  long vsInProcess = 0; // per process: output bytes that differ from the in-process call's
  std::mt19937 rng(777);
  long mismatches = 0, vsPerBuffer = 0, crossRank = 0, armed = 0, guards = 0, nanChecked = 0;
  std::string first;
  const auto t0 = std::chrono::steady_clock::now();
  for (int c = 0; c < calls; ++c) {
    const size_t B = counts.size();
    std::vector<std::vector<std::unique_ptr<Buffer>>> in(B), out(B), outOne(B);
    std::vector<std::vector<std::vector<llc_u32>>> bits(B);
    LlcommAllReduceManyParams p;
    std::memset(&p, 0, sizeof p);
    for (size_t b = 0; b < B; ++b) {
      bits[b].assign(n, std::vector<llc_u32>(counts[b]));
      for (unsigned r = 0; r < n; ++r) {
        in[b].push_back(std::make_unique<Buffer>(counts[b] * eb, 0));
        out[b].push_back(std::make_unique<Buffer>(counts[b] * eb, 0xCD));
        outOne[b].push_back(std::make_unique<Buffer>(counts[b] * eb, 0xCD));
        for (size_t i = 0; i < counts[b]; ++i) {
          llc_u32 v = fromDouble(dt, (static_cast<int>(rng() % 17) - 8) / 8.0);
          if (r == n - 1 && i % 53 == 7) v = sentinelElem;
          bits[b][r][i] = v;
          setElem(*in[b][r], eb, i, v);
        }
        p.input[b][r] = in[b][r]->addr();
        p.output[b][r] = out[b][r]->addr();
      }
      p.count[b] = counts[b];
    }
    for (unsigned r = 0; r < n; ++r) {
      p.recvBuf[r] = rig.recv[r]->addr();
      p.scratch[r] = rig.scratch[r]->addr();
      p.launchRanks[r] = static_cast<llc_u8>(r);
    }
    p.errorWord = rig.errorWord.addr();
    p.timeoutNs = static_cast<llc_u64>(timeoutMs * 1e6);
    p.sentinel = s;
    p.buffers = static_cast<llc_u32>(B);
    p.nranks = n;
    p.ranksInLaunch = n;
    p.blocksPerRank = blocks;
    std::vector<std::vector<std::unique_ptr<Buffer>>> outInP(B); // per process: the in-process call's outputs
    if (perProcess) {
      // Every rank's own launch, all at once (as processes would): ranksInLaunch 1, its own error word and signature
      // words, the signature block after its data blocks.
      blockDim.x = threads;
      gridDim.x = blocks + 1;
      std::vector<std::thread> ranks;
      for (unsigned r = 0; r < n; ++r) {
        if (static_cast<int>(r) == oddRank && oddAllReduce) {
          // The odd rank makes an AllReduce call instead (oneshot-sentinel of buffer 0's count, one data block and
          // its signature block, its own error word): the same signature epoch word and slots, other words.
          LlcommAllReduceParams q;
          std::memset(&q, 0, sizeof q);
          for (unsigned k = 0; k < n; ++k) {
            q.recvBuf[k] = rig.recv[k]->addr();
            q.scratch[k] = rig.scratch[k]->addr();
          }
          q.input[r] = in[0][r]->addr();
          q.output[r] = out[0][r]->addr();
          q.errorWord = rankErrors[r]->addr();
          q.count = counts[0];
          q.timeoutNs = p.timeoutNs;
          q.sentinel = s;
          q.nranks = n;
          q.ranksInLaunch = 1;
          q.launchRanks[0] = static_cast<llc_u8>(r);
          q.blocksPerRank = 1;
          q.signatureChunk = 1u << 21; // call-signature.ts signatureChunkBits(0, 1): chunk 0 of 1
          ranks.emplace_back([&, q] { emuLaunch(one, q, 2, threads, false); });
          continue;
        }
        LlcommAllReduceManyParams pr = ownLaunch(p, r, rankErrors[r]->addr(), signatures[r]);
        if (static_cast<int>(r) == oddRank && oddCount >= 0) pr.count[oddBuffer] = static_cast<llc_u64>(oddCount);
        // A rank whose buffers are all empty: the host's launch of the signature block alone (fused-launcher.ts
        // allReduceManyLaunches: no data block, blocksPerRank 0).
        bool empty = true;
        for (size_t b = 0; b < B; ++b) empty = empty && pr.count[b] == 0;
        if (empty) pr.blocksPerRank = 0;
        const unsigned grid = (empty ? 0u : blocks) + 1u;
        ranks.emplace_back([&, pr, grid] { emuLaunch(many, pr, grid, threads, false); });
      }
      for (auto& th : ranks) th.join();
      if (oddRank >= 0) break; // a mismatched call: one call, every rank's error word is printed
      // The same call in process into fresh outputs (the inputs are not written); an empty call launches nothing there.
      bool allEmpty = true;
      for (size_t b = 0; b < B; ++b) allEmpty = allEmpty && counts[b] == 0;
      if (allEmpty) continue;
      LlcommAllReduceManyParams q = p;
      for (size_t b = 0; b < B; ++b)
        for (unsigned r = 0; r < n; ++r) {
          outInP[b].push_back(std::make_unique<Buffer>(counts[b] * eb, 0xCD));
          q.output[b][r] = outInP[b][r]->addr();
        }
      emuLaunch(many, q, n * blocks, threads);
      for (size_t b = 0; b < B; ++b)
        for (unsigned r = 0; r < n; ++r) {
          for (size_t i = 0; i < counts[b] * eb; ++i) vsInProcess += out[b][r]->data()[i] != outInP[b][r]->data()[i];
          if (!outInP[b][r]->guardIntact()) guards++;
        }
    } else {
      emuLaunch(many, p, n * blocks, threads);
    }
    // One oneshot-sentinel call per buffer, one block each (the tests keep every buffer within one lane).
    for (size_t b = 0; b < B; ++b) {
      std::vector<llc_u64> ins, outs;
      for (unsigned r = 0; r < n; ++r) {
        ins.push_back(in[b][r]->addr());
        outs.push_back(outOne[b][r]->addr());
      }
      rig.oneshotSentinel(one, ins, outs, counts[b], p.timeoutNs, threads);
    }
    for (size_t b = 0; b < B; ++b)
      for (size_t i = 0; i < counts[b]; ++i) {
        double ref = 0;
        bool nan = false;
        for (unsigned r = 0; r < n; ++r) {
          nan = nan || bits[b][r][i] == sentinelElem;
          ref += toDouble(dt, bits[b][r][i]);
        }
        const llc_u32 g0 = getElem(*out[b][0], eb, i);
        for (unsigned r = 0; r < n; ++r) {
          const llc_u32 g = getElem(*out[b][r], eb, i);
          if (g != g0) crossRank++;
          if (g != getElem(*outOne[b][r], eb, i)) vsPerBuffer++;
          const bool ok = nan ? std::isnan(toDouble(dt, g)) : g == fromDouble(dt, ref);
          if (nan) nanChecked++;
          if (!ok && mismatches++ == 0) {
            char m[200];
            std::snprintf(m, sizeof m, "call %d buffer %zu rank %u element %zu: got 0x%x want %g", c, b, r, i, g, ref);
            first = m;
          }
        }
      }
    for (size_t b = 0; b < B; ++b)
      for (unsigned r = 0; r < n; ++r)
        if (!in[b][r]->guardIntact() || !out[b][r]->guardIntact() || !outOne[b][r]->guardIntact()) guards++;
    armed += rig.notArmed();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  guards += rig.guardsBroken();
  const LlcommErrorWord ew = rig.error();
  const bool ok = mismatches == 0 && vsPerBuffer == 0 && crossRank == 0 && armed == 0 && guards == 0 && ew.code == 0 &&
                  vsInProcess == 0;
  std::printf("{\"ok\":%s,\"mismatches\":%ld,\"diffsVsPerBuffer\":%ld,\"crossRankDiffs\":%ld,\"nanChecked\":%ld,"
              "\"sentinelBytesNotArmed\":%ld,\"guardsBroken\":%ld,\"first\":\"%s\",\"error\":%s,\"seconds\":%.3f,"
              "\"diffsVsInProcess\":%ld,\"rankErrors\":%s,\"sigEpochs\":%s}\n",
              ok ? "true" : "false", mismatches, vsPerBuffer, crossRank, nanChecked, armed, guards, first.c_str(),
              jsonError(ew).c_str(), seconds, vsInProcess, rankErrorsJson(rankErrors).c_str(), sigEpochsJson(rig).c_str());
  return 0;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const int rc = mode == "norm" ? runNorm(argc, argv) : mode == "many" ? runMany(argc, argv) : 2;
  if (rc == 2) std::fprintf(stderr, "usage: see fused_emulator.cpp\n");
  return rc;
}
