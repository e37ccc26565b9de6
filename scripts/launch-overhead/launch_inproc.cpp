// The C side of the in-process launch comparison (issue 17): a shared library that measure.mjs loads with koffi into
// the same Node process, so the C loop launches the very PreparedLaunch the JS path launches: the same CUlaunchConfig
// block, CUfunction, parameter bytes, stream and driver instance (libcuda.so.1 is already loaded by llcomm; dlopen
// returns that handle). Only the launch calls are timed, with steady_clock, as in launch_loop.cpp; the caller
// synchronizes the stream before each burst, so every burst starts on an idle queue.
//
//   g++ -O2 -std=c++17 -shared -fPIC -o liblaunch_inproc.so launch_inproc.cpp -ldl
#include <dlfcn.h>

#include <chrono>
#include <cstdint>

namespace {
using LaunchKernelEx = int (*)(const void* config, void* f, void** kernelParams, void** extra);
LaunchKernelEx launchKernelEx = nullptr;
}  // namespace

// 0 when cuLaunchKernelEx was found in the libcuda.so.1 this process already uses, else 1.
extern "C" int llcomm_inproc_init() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return 1;
  launchKernelEx = reinterpret_cast<LaunchKernelEx>(dlsym(h, "cuLaunchKernelEx"));
  return launchKernelEx == nullptr ? 1 : 0;
}

// n back-to-back cuLaunchKernelEx(config, f, kernelParams, extra) calls; host µs per launch, or minus the first
// failing CUresult.
extern "C" double llcomm_inproc_burst(uint64_t config, uint64_t f, uint64_t kernelParams, uint64_t extra, int n) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; i++) {
    const int rc = launchKernelEx(reinterpret_cast<const void*>(config), reinterpret_cast<void*>(f),
                                  reinterpret_cast<void**>(kernelParams), reinterpret_cast<void**>(extra));
    if (rc != 0) return -static_cast<double>(rc);
  }
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
}
