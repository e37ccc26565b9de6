// The LL buffer, device side: the thread-level API of SPEC §2 with the CPU backend's names (send, recv, recvReduce,
// bcast, reset, resetRange, advanceEpoch), as a plain handle over one rank's view of every rank's receive buffer
// for one channel and one epoch (MSCCL++'s DeviceHandle shape: built per block from the kernel parameters, valid
// for the kernel's lifetime).
//
// Layout of the view: `lanes` lanes of `laneBytes` each, at `baseOffset` inside every rank's receive buffer; lane s
// of rank r's buffer is where sender s writes for r. A slot index counts slots of the format inside a lane.
//
// Contract for callers (what the kernels guarantee):
//  * each (receiver, lane, slot) is written at most once per epoch and read by exactly one thread of the receiver;
//  * the same epoch sequence runs on every rank for this channel (blocksPerRank and the element split are pure
//    functions of the call), and the view's half is the epoch's parity (double buffering, SPEC §2);
//  * advanceEpoch() runs once at the end of the call, after every recv of this block.
#pragma once
#include "llcomm/channel.cuh"
#include "llcomm/dtype.cuh"
#include "llcomm/packets.cuh"
#include "llcomm/wait.cuh"

#if LLC_HAS_DEVICE

#define LLCOMM_RECV_BATCH 8 // peers polled together by recvReduce (loads in flight; values kept in registers)

template <class Fmt>
struct LlBuffer {
  static constexpr int kWords = Fmt::kWords;
  struct Value {
    llc_u32 w[Fmt::kWords];
  };

  const llc_u64* recvBuf; // params.recvBuf: each rank's receive buffer, by global rank
  llc_u64 baseOffset;     // this channel-half (and sub-region) inside every rank's buffer
  llc_u64 laneBytes;
  llc_u32 me;
  llc_u32 nranks;
  llc_u32 epoch;
  LlcWaiter* waiter;

  LLC_DEVICE void* slotPtr(llc_u32 rank, llc_u32 lane, llc_u32 slot) const {
    return reinterpret_cast<char*>(recvBuf[rank]) + baseOffset + lane * laneBytes +
           static_cast<llc_u64>(slot) * Fmt::kSlotBytes;
  }

  // Write `v` into `peer`'s lane `me`, slot `slot`, tagged with this epoch.
  LLC_DEVICE void send(llc_u32 peer, llc_u32 slot, const Value& v) const { Fmt::write(slotPtr(peer, me, slot), v.w, epoch); }

  // Send to every rank but me, starting after me so that ranks do not all hit rank 0 first.
  LLC_DEVICE void bcast(llc_u32 slot, const Value& v) const {
    for (llc_u32 k = 1; k < nranks; ++k) {
      llc_u32 peer = me + k;
      peer = peer >= nranks ? peer - nranks : peer;
      send(peer, slot, v);
    }
  }

  // Wait for `peer`'s value in my lane `peer`, slot `slot`; re-arm the slot when the format needs it.
  LLC_DEVICE Value recv(llc_u32 peer, llc_u32 slot) const {
    Value v;
    void* p = slotPtr(me, peer, slot);
    LlcSpin spin;
    while (!Fmt::tryRead(p, epoch, v.w)) {
      if (!waiter->keepWaiting(spin, peer, Fmt::kWhat, slot)) break;
    }
    if (Fmt::kRearm) Fmt::rearm(p); // ordering argument at the format's rearm()
    return v;
  }

  // Receive slot `slot` from every rank and reduce in f32 in rank order 0..nranks-1 (my own contribution is `own`,
  // not read from the buffer, canonicalized like a sent value), so every rank computes bitwise the same result. Peers are polled
  // LLCOMM_RECV_BATCH at a time with all their loads in flight; received values wait in registers.
  template <int DT>
  LLC_DEVICE Value recvReduce(llc_u32 slot, const Value& own) const {
    LlcAcc<DT, Fmt::kWords> acc;
    for (llc_u32 base = 0; base < nranks; base += LLCOMM_RECV_BATCH) {
      Value got[LLCOMM_RECV_BATCH];
      llc_u32 pending = 0;
#pragma unroll
      for (int j = 0; j < LLCOMM_RECV_BATCH; ++j)
        if (base + j < nranks && base + j != me) pending |= 1u << j;
      LlcSpin spin;
      while (pending != 0) {
#pragma unroll
        for (int j = 0; j < LLCOMM_RECV_BATCH; ++j)
          if ((pending >> j) & 1u)
            if (Fmt::tryRead(slotPtr(me, base + j, slot), epoch, got[j].w)) pending &= ~(1u << j);
        if (pending != 0 && !waiter->keepWaiting(spin, base + __ffs(pending) - 1, Fmt::kWhat, slot)) break;
      }
#pragma unroll
      for (int j = 0; j < LLCOMM_RECV_BATCH; ++j) {
        const llc_u32 r = base + j;
        if (r < nranks) {
          Value v;
#pragma unroll
          for (int i = 0; i < Fmt::kWords; ++i) v.w[i] = r == me ? Fmt::canonicalize(own.w[i]) : got[j].w[i];
          if (r == 0)
            acc.set(v.w);
          else
            acc.add(v.w);
          if (Fmt::kRearm && r != me) Fmt::rearm(slotPtr(me, r, slot)); // ordering argument at rearm()
        }
      }
    }
    Value out;
    acc.pack(out.w);
    return out;
  }

  // Re-arm slots [first, first + count) of every lane of my buffer (block-strided over the calling threads).
  // A no-op for LL formats, whose flags carry the epoch. Same ordering argument as Fmt::rearm().
  LLC_DEVICE void resetRange(llc_u32 first, llc_u32 count) const {
    if (!Fmt::kRearm) return;
    for (llc_u32 lane = 0; lane < nranks; ++lane)
      for (llc_u32 s = threadIdx.x; s < count; s += blockDim.x) Fmt::rearm(slotPtr(me, lane, first + s));
  }
  LLC_DEVICE void reset() const { resetRange(0, static_cast<llc_u32>(laneBytes / Fmt::kSlotBytes)); }
};

template <class Fmt>
LLC_DEVICE LlBuffer<Fmt> llcMakeBuffer(const llc_u64* recvBuf, llc_u64 baseOffset, llc_u64 laneBytes, llc_u32 me,
                                       llc_u32 nranks, const LlcChannel& ch, LlcWaiter* waiter) {
  LlBuffer<Fmt> b;
  b.recvBuf = recvBuf;
  b.baseOffset = baseOffset;
  b.laneBytes = laneBytes;
  b.me = me;
  b.nranks = nranks;
  b.epoch = ch.epoch;
  b.waiter = waiter;
  return b;
}

// Payload of `W` words at byte `offset` of a message of `totalBytes` bytes (zero-padded past the end).
template <int DT, int W>
LLC_DEVICE void llcLoadPayload(const char* base, llc_u64 offset, llc_u64 totalBytes, llc_u32* w) {
  if (offset + 4 * W <= totalBytes) {
    if (W == 4) {
      const LlcWords4 v = llcLoadWeakV4(base + offset);
#pragma unroll
      for (int i = 0; i < W; ++i) w[i] = v.w[i];
    } else if (W == 2) {
      llcLoadWeak2(base + offset, w);
    } else {
      llcLoadWeak1(base + offset, w);
    }
  } else {
    const LlcWords4 v = llcLoadTail<DT>(base + offset, static_cast<llc_u32>(totalBytes - offset));
#pragma unroll
    for (int i = 0; i < W; ++i) w[i] = v.w[i];
  }
}
template <int DT, int W>
LLC_DEVICE void llcStorePayload(char* base, llc_u64 offset, llc_u64 totalBytes, const llc_u32* w) {
  if (offset + 4 * W <= totalBytes) {
    if (W == 4) {
      LlcWords4 v;
#pragma unroll
      for (int i = 0; i < W; ++i) v.w[i] = w[i];
      llcStoreWeakV4(base + offset, v);
    } else if (W == 2) {
      llcStoreWeak2(base + offset, w);
    } else {
      llcStoreWeak1(base + offset, w);
    }
  } else {
    LlcWords4 v;
#pragma unroll
    for (int i = 0; i < 4; ++i) v.w[i] = i < W ? w[i < W ? i : 0] : 0u;
    llcStoreTail<DT>(base + offset, v, static_cast<llc_u32>(totalBytes - offset));
  }
}

#endif // LLC_HAS_DEVICE
