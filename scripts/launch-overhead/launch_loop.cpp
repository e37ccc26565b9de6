// The C++ side of the eager launch-overhead comparison (issue 4, item 4): the same cubin, the same parameter
// bytes, the same grid/block/attributes as llcomm's PreparedLaunch, issued with cuLaunchKernelEx from a plain loop.
//
// libcuda is opened with dlopen (no link-time CUDA dependency: builds with `g++ -O2 launch_loop.cpp -ldl`).
// Input: a manifest written by measure.mjs (one line per item):
//   cubin <path>                        the cubin file (written by the Node side from llcomm's NVRTC compile)
//   kernel <name>
//   shape <gridX> <blockX> <sharedBytes>
//   buffer <index> <bytes> <role>       device buffers to allocate (cuMemAlloc), zeroed
//   fill <index> <offset> <bytes> <word32-hex>   cuMemsetD32 of a range (sentinel fills, non-zero inputs)
//   params <bytes> <hex>                the kernel's parameter struct as llcomm packed it
//   reloc <paramOffset> <index> <addend>  params[paramOffset] = u64 address of buffer index + addend
//   check-zero <index>                  after the runs the buffer must read back all zero (the error word)
//   variant <label> <cooperative 0|1> <pdl 0|1>
// Output: one JSON object per variant on stdout.
//
// Timing (same as measure.mjs): per variant, warm-up, then B bursts of 64 launches; each burst starts on an idle
// stream (synchronized before), and only the launch calls are timed (steady_clock around the 64 calls), so the
// host figure is the launch path's own cost, not back-pressure from a full queue. Device time per kernel: events
// around one burst of 64 back-to-back launches (GPU-bound when the host issues faster than kernels end).
// Steady-state: N launches without synchronizing, host µs/launch (converges on device time when the GPU is the
// bottleneck).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef void* CUmodule;
typedef void* CUfunction;
typedef void* CUstream;
typedef void* CUevent;
typedef unsigned long long CUdeviceptr;

// cuda.h layouts (x86-64): CUlaunchAttribute is 72 bytes (id, pad, 64-byte value union); CUlaunchConfig 56 bytes.
struct CUlaunchAttribute {
  unsigned id;
  char pad[4];
  union {
    char bytes[64];
    int cooperative;
    int programmaticStreamSerializationAllowed;
  } value;
};
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;
  unsigned numAttrs;
};
static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute layout");
static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig layout");
static const unsigned CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2;
static const unsigned CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;

#define DRIVER_FUNCTIONS(X)                                                                    \
  X(cuInit, (unsigned))                                                                       \
  X(cuDeviceGet, (CUdevice*, int))                                                            \
  X(cuDevicePrimaryCtxRetain, (CUcontext*, CUdevice))                                         \
  X(cuCtxSetCurrent, (CUcontext))                                                             \
  X(cuModuleLoadData, (CUmodule*, const void*))                                               \
  X(cuModuleGetFunction, (CUfunction*, CUmodule, const char*))                                \
  X(cuMemAlloc_v2, (CUdeviceptr*, size_t))                                                    \
  X(cuMemFree_v2, (CUdeviceptr))                                                              \
  X(cuMemsetD32_v2, (CUdeviceptr, unsigned, size_t))                                          \
  X(cuMemcpyDtoH_v2, (void*, CUdeviceptr, size_t))                                            \
  X(cuStreamCreate, (CUstream*, unsigned))                                                    \
  X(cuStreamSynchronize, (CUstream))                                                          \
  X(cuEventCreate, (CUevent*, unsigned))                                                      \
  X(cuEventRecord, (CUevent, CUstream))                                                       \
  X(cuEventSynchronize, (CUevent))                                                            \
  X(cuLaunchKernelEx, (const CUlaunchConfig*, CUfunction, void**, void**))                    \
  X(cuGetErrorName, (CUresult, const char**))

#define DECLARE(name, args) static CUresult(*p_##name) args = nullptr;
DRIVER_FUNCTIONS(DECLARE)
static CUresult (*p_cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;

static void die(const std::string& what) {
  std::fprintf(stderr, "launch_loop: %s\n", what.c_str());
  std::exit(1);
}

static void check(const char* call, CUresult rc) {
  if (rc == 0) return;
  const char* name = "?";
  if (p_cuGetErrorName) p_cuGetErrorName(rc, &name);
  die(std::string(call) + " failed: " + name + " (" + std::to_string(rc) + ")");
}
#define CK(call) check(#call, p_##call)

static void loadDriver() {
  const char* path = std::getenv("LLCOMM_LIBCUDA");
  void* h = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) die(std::string("dlopen libcuda: ") + dlerror());
#define RESOLVE(name, args)                                                  \
  p_##name = reinterpret_cast<CUresult(*) args>(dlsym(h, #name));            \
  if (!p_##name) die("dlsym " #name);
  DRIVER_FUNCTIONS(RESOLVE)
  // CUDA 12.8+ names the current one _v2 (the CUDA 13 header maps cuEventElapsedTime to it).
  void* e = dlsym(h, "cuEventElapsedTime_v2");
  if (!e) e = dlsym(h, "cuEventElapsedTime");
  if (!e) die("dlsym cuEventElapsedTime");
  p_cuEventElapsedTime = reinterpret_cast<CUresult (*)(float*, CUevent, CUevent)>(e);
}

struct Buffer {
  size_t bytes = 0;
  std::string role;
  CUdeviceptr ptr = 0;
};
struct Fill {
  int index;
  size_t offset, bytes;
  unsigned word;
};
struct Reloc {
  size_t paramOffset;
  int index;
  unsigned long long addend;
};
struct Variant {
  std::string label;
  int cooperative, pdl;
};

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char** argv) {
  if (argc < 2) die("usage: launch_loop <manifest> [bursts=200] [steadyLaunches=20000]");
  const int bursts = argc > 2 ? std::atoi(argv[2]) : 200;
  const int steadyLaunches = argc > 3 ? std::atoi(argv[3]) : 20000;
  const int burst = 64;

  std::ifstream in(argv[1]);
  if (!in) die(std::string("cannot read ") + argv[1]);
  std::string cubinPath, kernel, caseName = argv[1];
  unsigned gridX = 0, blockX = 0, smem = 0;
  std::vector<Buffer> buffers;
  std::vector<Fill> fills;
  std::vector<Reloc> relocs;
  std::vector<int> checkZero;
  std::vector<Variant> variants;
  std::vector<unsigned char> params;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string key;
    if (!(ls >> key)) continue;
    if (key == "case") ls >> caseName;
    else if (key == "cubin") ls >> cubinPath;
    else if (key == "kernel") ls >> kernel;
    else if (key == "shape") ls >> gridX >> blockX >> smem;
    else if (key == "buffer") {
      int i;
      Buffer b;
      ls >> i >> b.bytes >> b.role;
      if (i != static_cast<int>(buffers.size())) die("buffers must be listed in index order");
      buffers.push_back(b);
    } else if (key == "fill") {
      Fill f;
      std::string word;
      ls >> f.index >> f.offset >> f.bytes >> word;
      f.word = static_cast<unsigned>(std::stoul(word, nullptr, 16));
      fills.push_back(f);
    } else if (key == "params") {
      size_t n;
      std::string hex;
      ls >> n >> hex;
      if (hex.size() != 2 * n) die("params hex length mismatch");
      params.resize(n);
      for (size_t i = 0; i < n; i++) params[i] = static_cast<unsigned char>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
    } else if (key == "reloc") {
      Reloc r;
      ls >> r.paramOffset >> r.index >> r.addend;
      relocs.push_back(r);
    } else if (key == "check-zero") {
      int i;
      ls >> i;
      checkZero.push_back(i);
    } else if (key == "variant") {
      Variant v;
      ls >> v.label >> v.cooperative >> v.pdl;
      variants.push_back(v);
    } else die("unknown manifest line: " + line);
  }
  if (cubinPath.empty() || kernel.empty() || gridX == 0 || params.empty()) die("incomplete manifest");

  std::ifstream cf(cubinPath, std::ios::binary);
  if (!cf) die("cannot read cubin " + cubinPath);
  std::vector<char> cubin((std::istreambuf_iterator<char>(cf)), std::istreambuf_iterator<char>());

  loadDriver();
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CUmodule mod;
  CK(cuModuleLoadData(&mod, cubin.data()));
  CUfunction fn;
  CK(cuModuleGetFunction(&fn, mod, kernel.c_str()));

  for (auto& b : buffers) {
    CK(cuMemAlloc_v2(&b.ptr, b.bytes));
    CK(cuMemsetD32_v2(b.ptr, 0, (b.bytes + 3) / 4));
  }
  for (auto& f : fills) {
    if (f.index < 0 || f.index >= static_cast<int>(buffers.size()) || f.offset + f.bytes > buffers[f.index].bytes)
      die("fill out of range");
    CK(cuMemsetD32_v2(buffers[f.index].ptr + f.offset, f.word, f.bytes / 4));
  }
  for (auto& r : relocs) {
    if (r.index < 0 || r.index >= static_cast<int>(buffers.size()) || r.paramOffset + 8 > params.size())
      die("reloc out of range");
    unsigned long long v = buffers[r.index].ptr + r.addend;
    std::memcpy(params.data() + r.paramOffset, &v, 8);
  }

  CUstream stream;
  CK(cuStreamCreate(&stream, 1 /* CU_STREAM_NON_BLOCKING, as llcomm's streamCreate */));
  CUevent e0, e1;
  CK(cuEventCreate(&e0, 0));
  CK(cuEventCreate(&e1, 0));

  for (const Variant& v : variants) {
    CUlaunchAttribute attrs[2];
    std::memset(attrs, 0, sizeof attrs);
    unsigned n = 0;
    if (v.cooperative) {
      attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      attrs[n].value.cooperative = 1;
      n++;
    }
    if (v.pdl) {
      attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attrs[n].value.programmaticStreamSerializationAllowed = 1;
      n++;
    }
    CUlaunchConfig cfg;
    std::memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = gridX;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = blockX;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = smem;
    cfg.hStream = stream;
    cfg.attrs = attrs;
    cfg.numAttrs = n;
    void* kernelParams[1] = {params.data()};

    auto launch = [&]() {
      CUresult rc = p_cuLaunchKernelEx(&cfg, fn, kernelParams, nullptr);
      if (rc != 0) check("cuLaunchKernelEx", rc);
    };
    // Warm-up: 10 bursts.
    for (int b = 0; b < 10; b++) {
      for (int i = 0; i < burst; i++) launch();
      CK(cuStreamSynchronize(stream));
    }
    std::vector<double> burstUs;
    burstUs.reserve(bursts);
    double sumUs = 0;
    for (int b = 0; b < bursts; b++) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < burst; i++) launch();
      auto t1 = std::chrono::steady_clock::now();
      CK(cuStreamSynchronize(stream));
      double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / burst;
      burstUs.push_back(us);
      sumUs += us;
    }
    // Device time per kernel: events around bursts of 64 back-to-back kernels (median of 20).
    std::vector<double> deviceUs;
    for (int b = 0; b < 20; b++) {
      CK(cuEventRecord(e0, stream));
      for (int i = 0; i < burst; i++) launch();
      CK(cuEventRecord(e1, stream));
      CK(cuEventSynchronize(e1));
      float ms = 0;
      check("cuEventElapsedTime", p_cuEventElapsedTime(&ms, e0, e1));
      deviceUs.push_back(1000.0 * ms / burst);
    }
    // Steady state: no synchronization inside the loop.
    auto s0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steadyLaunches; i++) launch();
    auto s1 = std::chrono::steady_clock::now();
    CK(cuStreamSynchronize(stream));
    double steadyUs = std::chrono::duration<double, std::micro>(s1 - s0).count() / steadyLaunches;
    std::printf(
        "{\"side\":\"cpp\",\"case\":\"%s\",\"variant\":\"%s\",\"kernel\":\"%s\",\"grid\":%u,\"block\":%u,"
        "\"cooperative\":%d,\"pdl\":%d,\"burst\":%d,\"bursts\":%d,\"hostUsPerLaunchMedian\":%.4f,"
        "\"hostUsPerLaunchMean\":%.4f,\"deviceUsPerKernel\":%.4f,\"steadyHostUsPerLaunch\":%.4f,\"steadyLaunches\":%d}\n",
        caseName.c_str(), v.label.c_str(), kernel.c_str(), gridX, blockX, v.cooperative, v.pdl, burst, bursts,
        median(burstUs), sumUs / bursts, median(deviceUs), steadyUs, steadyLaunches);
    std::fflush(stdout);
  }

  for (int i : checkZero) {
    std::vector<unsigned char> back(buffers[i].bytes);
    CK(cuMemcpyDtoH_v2(back.data(), buffers[i].ptr, back.size()));
    for (unsigned char c : back)
      if (c) die("buffer " + buffers[i].role + " is not zero after the runs (a device timeout?)");
  }
  for (auto& b : buffers) CK(cuMemFree_v2(b.ptr));
  return 0;
}
