#!/usr/bin/env node
// Probes the GPU machine through llcomm's own FFI (llcomm/internal): libraries, driver, NVRTC, cooperative and PDL
// launches through cuLaunchKernelEx (both parameter-passing modes), graph capture, events, NCCL with one rank,
// NCCL symmetric windows. Prints one JSON object (also written to $OUT/probe.json when OUT is set).
import { writeFileSync } from 'node:fs'

const ffi = await import('llcomm/internal')
const r = { steps: {} }
const step = async (name, f) => {
  try {
    r.steps[name] = { ok: true, value: await f() }
  } catch (e) {
    r.steps[name] = { ok: false, error: `${e.code ?? ''} ${e.message}`.trim() }
  }
}
let d
await step('libcuda', () => {
  d = ffi.cudaDriver()
  return { path: d.libraryPath, driverVersion: d.driverVersion(), devices: d.deviceCount() }
})
let dev, ctx
await step('device0', () => {
  dev = d.device(0)
  ctx = d.primaryContextRetain(dev)
  d.setCurrent(ctx)
  const A = ffi.CU_DEVICE_ATTRIBUTE
  return {
    name: d.deviceName(dev),
    sm: `${d.deviceAttribute(dev, A.COMPUTE_CAPABILITY_MAJOR)}.${d.deviceAttribute(dev, A.COMPUTE_CAPABILITY_MINOR)}`,
    sms: d.deviceAttribute(dev, A.MULTIPROCESSOR_COUNT),
    coop: d.deviceAttribute(dev, A.COOPERATIVE_LAUNCH),
    smemOptin: d.deviceAttribute(dev, A.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
  }
})
let cubin
await step('nvrtc', () => {
  const n = ffi.nvrtc()
  const src = `#include "probe/params.cuh"
extern "C" __global__ void probe_add(const __grid_constant__ ProbeParams p) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  if (i < p.n) p.out[i] = p.in[i] + p.add;
}`
  const hdr = 'struct ProbeParams { float* out; const float* in; unsigned n; float add; };'
  const t0 = performance.now()
  const o = n.compile(
    src,
    'probe.cu',
    [{ name: 'probe/params.cuh', source: hdr }],
    ['--gpu-architecture=sm_90', '-default-device', '--std=c++17'],
  )
  cubin = o.cubin
  let badLog = ''
  try {
    n.compile('this is not cuda', 'bad.cu', [], ['--gpu-architecture=sm_90'])
  } catch (e) {
    badLog = `${e.code}: ${e.message.slice(0, 200)}`
  }
  return {
    path: n.libraryPath,
    version: n.version(),
    cubinBytes: cubin.length,
    ms: performance.now() - t0,
    log: o.log,
    badCompile: badLog,
  }
})
await step('launch', () => {
  const mod = d.moduleLoadData(cubin)
  const f = d.moduleFunction(mod, 'probe_add')
  const n = 1000
  const inp = d.memAlloc(n * 4),
    out = d.memAlloc(n * 4)
  const host = Float32Array.from({ length: n }, (_, i) => i)
  d.copyHtoD(inp, host)
  const s = d.streamCreate()
  const params = Buffer.alloc(24)
  params.writeBigUInt64LE(BigInt(out), 0)
  params.writeBigUInt64LE(BigInt(inp), 8)
  params.writeUInt32LE(n, 16)
  params.writeFloatLE(0.5, 20)
  const res = {}
  for (const passing of ['kernelParams', 'extra']) {
    for (const flags of [
      { cooperative: true, pdl: false },
      { cooperative: true, pdl: true },
      { cooperative: false, pdl: true },
    ]) {
      const key = `${passing}/coop=${flags.cooperative}/pdl=${flags.pdl}`
      try {
        d.memsetD32(out, 0x7fc00001, n)
        const L = new ffi.PreparedLaunch(
          d,
          f,
          'probe_add',
          { gridDimX: 4, blockDimX: 256, sharedBytes: 0 },
          flags,
          24,
          passing,
        )
        L.setParams(params)
        L.launchOn(s)
        d.streamSynchronize(s)
        const back = new Float32Array(n)
        d.copyDtoH(back, out)
        res[key] = back.every((v, i) => v === i + 0.5) ? 'ok' : `wrong: ${back.slice(0, 4)}`
        L.dispose()
      } catch (e) {
        res[key] = `${e.code} ${e.message}`
      }
    }
  }
  res.occupancy256 = d.occupancyMaxActiveBlocksPerSm(f, 256, 0)
  res.regs = d.functionAttribute(f, ffi.CU_FUNC_ATTRIBUTE.NUM_REGS)
  // too-large cooperative grid must fail, not hang
  try {
    const L = new ffi.PreparedLaunch(
      d,
      f,
      'probe_add',
      { gridDimX: 132 * 64 + 1, blockDimX: 1024, sharedBytes: 0 },
      { cooperative: true, pdl: false },
      24,
    )
    L.setParams(params)
    L.launchOn(s)
    d.streamSynchronize(s)
    res.tooLarge = 'launched?!'
  } catch (e) {
    res.tooLarge = e.message.slice(0, 120)
  }
  // eager launch cost and graph replay
  const L = new ffi.PreparedLaunch(
    d,
    f,
    'probe_add',
    { gridDimX: 1, blockDimX: 32, sharedBytes: 0 },
    { cooperative: true, pdl: false },
    24,
  )
  params.writeUInt32LE(32, 16)
  L.setParams(params)
  L.setStream(s)
  for (let i = 0; i < 1000; i++) L.launch()
  d.streamSynchronize(s)
  const N = process.env.PROBE_QUICK ? 10 : 20000
  const t0 = performance.now()
  for (let i = 0; i < N; i++) L.launch()
  const hostUsPerLaunch = ((performance.now() - t0) * 1000) / N
  d.streamSynchronize(s)
  res.eagerHostUsPerLaunch = hostUsPerLaunch
  d.beginCapture(s)
  for (let i = 0; i < 100; i++) L.launch()
  const g = d.endCapture(s)
  const ge = d.graphInstantiate(g)
  const e0 = d.eventCreate(),
    e1 = d.eventCreate()
  d.graphLaunch(ge, s)
  d.streamSynchronize(s)
  d.eventRecord(e0, s)
  for (let i = 0; i < 20; i++) d.graphLaunch(ge, s)
  d.eventRecord(e1, s)
  d.eventSynchronize(e1)
  res.graphUsPerKernel = (d.eventElapsedMs(e0, e1) * 1000) / 2000
  d.graphExecDestroy(ge)
  d.graphDestroy(g)
  d.eventDestroy(e0)
  d.eventDestroy(e1)
  L.dispose()
  d.streamDestroy(s)
  d.memFree(inp)
  d.memFree(out)
  d.moduleUnload(mod)
  return res
})
if (!process.env.PROBE_QUICK)
  await step('nccl', () => {
    const n = ffi.nccl()
    const v = n.version()
    const [comm] = n.commInitAll([0])
    d.setCurrent(ctx)
    const count = 1024
    const a = d.memAlloc(count * 4),
      b = d.memAlloc(count * 4)
    const host = Float32Array.from({ length: count }, (_, i) => i * 0.25 - 3)
    d.copyHtoD(a, host)
    const s = d.streamCreate()
    n.allReduce(a, b, count, 'f32', comm, s)
    d.streamSynchronize(s)
    const back = new Float32Array(count)
    d.copyDtoH(back, b)
    const plainOk = back.every((x, i) => x === host[i])
    let sym = 'not available'
    if (n.hasSymmetricWindows) {
      try {
        const sa = n.memAlloc(count * 4),
          sb = n.memAlloc(count * 4)
        const wa = n.windowRegister(comm, sa, count * 4),
          wb = n.windowRegister(comm, sb, count * 4)
        d.copyHtoD(sa, host)
        n.allReduce(sa, sb, count, 'f32', comm, s)
        d.streamSynchronize(s)
        const back2 = new Float32Array(count)
        d.copyDtoH(back2, sb)
        sym = back2.every((x, i) => x === host[i]) ? 'ok' : 'wrong'
        n.windowDeregister(comm, wa)
        n.windowDeregister(comm, wb)
        n.memFree(sa)
        n.memFree(sb)
      } catch (e) {
        sym = `${e.code} ${e.message}`
      }
    }
    n.commDestroy(comm)
    d.streamDestroy(s)
    d.memFree(a)
    d.memFree(b)
    return { path: n.libraryPath, version: v, nvls: process.env.NCCL_NVLS_ENABLE, plainOk, sym }
  })
const text = JSON.stringify(r, null, 1)
console.log(text)
if (process.env.OUT) writeFileSync(`${process.env.OUT}/probe.json`, text)
