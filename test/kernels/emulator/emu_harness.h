// What both emulator programs (emulator.cpp: the all-reduce kernels; fused_emulator.cpp: the fused ones) share: a
// launch of a kernel on host threads (every grid thread a std::thread, block and warp barriers, a block's shared
// memory) and guarded buffers (a canary after the data catches any write past the end).
#pragma once
#include "emu.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

// Runs `fn(p)` on grid x block host threads. `setDims = false` when two launches run at once (LLCOMM_EMU_ODD, the
// fused per-process runs): the caller sets blockDim/gridDim once beforehand, as the kernels read only blockDim, and
// resets emuClusterSize after the last launch (every concurrent launch sets the same cluster size).
template <class P>
static void emuLaunch(void (*fn)(const P), const P& p, unsigned grid, unsigned block, bool setDims = true,
                      unsigned clusterSize = 1) {
  if (setDims) {
    blockDim.x = block;
    gridDim.x = grid;
  }
  emuClusterSize = clusterSize; // grid is a multiple of it (the launcher's rule)
  const unsigned warpsPerBlock = (block + 31) / 32;
  std::vector<std::unique_ptr<std::barrier<>>> blockBarriers, warpBarriers, clusterBarriers;
  std::vector<std::vector<unsigned char>> shared(grid, std::vector<unsigned char>(kEmuSharedBytes, 0));
  std::vector<unsigned char*> sharedPtrs;
  for (auto& s : shared) sharedPtrs.push_back(s.data());
  std::vector<std::unique_ptr<EmuWarpShuffle>> shuffles;
  for (unsigned b = 0; b < grid; ++b) {
    blockBarriers.push_back(std::make_unique<std::barrier<>>(block));
    for (unsigned w = 0; w < warpsPerBlock; ++w) {
      warpBarriers.push_back(std::make_unique<std::barrier<>>(std::min(32u, block - 32 * w)));
      shuffles.push_back(std::make_unique<EmuWarpShuffle>());
      for (auto& row : shuffles.back()->gen)
        for (auto& g : row) g.store(0);
    }
    if (b % clusterSize == 0) clusterBarriers.push_back(std::make_unique<std::barrier<>>(block * clusterSize));
  }
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(grid) * block);
  for (unsigned b = 0; b < grid; ++b)
    for (unsigned t = 0; t < block; ++t)
      threads.emplace_back([&, b, t] {
        threadIdx.x = t;
        blockIdx.x = b;
        emuBlockBarrier = blockBarriers[b].get();
        emuBlockSharedMem = shared[b].data();
        emuWarpBarrier = warpBarriers[b * warpsPerBlock + t / 32].get();
        emuWarpShuffle = shuffles[b * warpsPerBlock + t / 32].get();
        for (unsigned& g : emuShuffleGen) g = 0;
        emuClusterBarrier = clusterBarriers[b / clusterSize].get();
        emuClusterShared = sharedPtrs.data() + (b / clusterSize) * clusterSize;
        fn(p);
      });
  for (auto& th : threads) th.join();
  if (setDims) emuClusterSize = 1; // concurrent launches (setDims = false) share it: their caller resets it
}

static constexpr size_t kGuard = 256;
static constexpr unsigned char kGuardByte = 0xA5;

// A 128-byte aligned buffer of `n` bytes filled with `fill`, followed by kGuard canary bytes.
struct Buffer {
  std::vector<unsigned char> bytes; // [pad to 128][data][guard]
  size_t size;
  size_t lead;
  explicit Buffer(size_t n, unsigned char fill) : bytes(n + 128 + kGuard, kGuardByte), size(n) {
    lead = (128 - reinterpret_cast<uintptr_t>(bytes.data()) % 128) % 128;
    std::memset(data(), fill, n);
  }
  unsigned char* data() { return bytes.data() + lead; }
  llc_u64 addr() { return reinterpret_cast<llc_u64>(data()); }
  bool guardIntact() const {
    for (size_t i = 0; i < kGuard; ++i)
      if (bytes[lead + size + i] != kGuardByte) return false;
    return true;
  }
};

// Element bits <-> double for the three dtypes (f16/bf16 through the device code's own conversions).
static double toDouble(int dt, llc_u32 bits) {
  if (dt == LLCOMM_DTYPE_F32) return __uint_as_float(bits);
  if (dt == LLCOMM_DTYPE_F16) return llcF32FromF16(static_cast<llc_u16>(bits));
  return __uint_as_float(bits << 16);
}
static llc_u32 fromDouble(int dt, double v) {
  if (dt == LLCOMM_DTYPE_F32) return __float_as_uint(static_cast<float>(v));
  if (dt == LLCOMM_DTYPE_F16) return llcF16FromF32Rn(static_cast<float>(v));
  return llcBf16FromF32Rn(static_cast<float>(v));
}
