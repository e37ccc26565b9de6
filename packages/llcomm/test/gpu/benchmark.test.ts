// benchmark() on cuda: graph-replay timing, rotating inputs, float64 check of the last outputs, skew and PDL.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createCudaCommunicator } from '../../src/backends/cuda/communicator.js'
import { ON_GPU, REDUCED, recordCase } from './gpu-harness.js'

test('benchmark(): timings, wrong = 0, skew reported apart, PDL on and off', { skip: !ON_GPU }, async () => {
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(8).fill(0) })
  const failures: string[] = []
  try {
    for (const algorithm of ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'twoshot-atomic'] as const) {
      if (!comm.algorithms.includes(algorithm)) continue
      for (const pdl of [false, true]) {
        for (const skewUs of [0, 2]) {
          const r = await comm.benchmark({
            algorithm,
            dtype: 'bf16',
            count: 4096,
            iters: REDUCED ? 100 : 1000,
            warmup: 100,
            pdl,
            skewUs,
          })
          const sorted = [...r.timesUs].sort((a, b) => a - b)
          const medianUs = sorted[Math.floor(sorted.length / 2)]
          const skewMedianUs = [...r.skewWaitUs].sort((a, b) => a - b)[Math.floor(r.skewWaitUs.length / 2)]
          const passed = r.wrong === 0 && r.timesUs.length > 0 && medianUs > 0 && (skewUs === 0 || skewMedianUs > 0)
          recordCase({
            name: `benchmark/${algorithm}/bf16/4096/pdl=${pdl}/skew=${skewUs}`,
            passed,
            medianUs,
            skewMedianUs,
            wrong: r.wrong,
            replays: r.timesUs.length,
          })
          if (!passed) failures.push(`${algorithm} pdl=${pdl} skew=${skewUs}: wrong=${r.wrong} median=${medianUs}`)
        }
      }
    }
  } finally {
    await comm.close()
  }
  assert.deepEqual(failures, [])
})

test('benchmark(computeUs): a fixed kernel before each call, its own time measured apart', {
  skip: !ON_GPU,
}, async () => {
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(4).fill(0) })
  const failures: string[] = []
  try {
    for (const algorithm of ['oneshot-ll', 'oneshot-sentinel'] as const) {
      const r = await comm.benchmark({ algorithm, dtype: 'bf16', count: 4096, iters: 100, warmup: 20, computeUs: 10 })
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
      // the spin kernel waits 10 µs of %globaltimer: its graph takes at least that per call, and the collective's
      // own time stays far below it
      const delayUs = median(r.skewWaitUs)
      const medianUs = median(r.timesUs)
      const passed = r.wrong === 0 && delayUs >= 10 && delayUs < 30 && medianUs > 0 && medianUs < delayUs
      recordCase({ name: `benchmark/${algorithm}/bf16/4096/compute=10`, passed, medianUs, delayUs, wrong: r.wrong })
      if (!passed) failures.push(`${algorithm}: wrong=${r.wrong} median=${medianUs} delay=${delayUs}`)
    }
  } finally {
    await comm.close()
  }
  assert.deepEqual(failures, [])
})

test('eager launch path: host cost of prepared issue() and device time per call (recorded, for issue 4)', {
  skip: !ON_GPU,
}, async () => {
  const { cudaDriver, CU_EVENT_DEFAULT } = await import('../../src/ffi/index.js')
  const d = cudaDriver()
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(8).fill(0) })
  const free: import('../../src/ffi/index.js').DevicePtr[] = []
  try {
    const count = 4096
    const ptrs = () =>
      Array.from({ length: 8 }, () => {
        const p = d.memAlloc(count * 2)
        free.push(p)
        d.memsetD32(p, 0x3c003c00, count / 2) // f16 ones
        return p
      })
    const inputs = ptrs()
    const outputs = ptrs()
    const s = d.streamCreate()
    const call = comm.prepareDeviceAllReduce({
      inputs,
      outputs,
      count,
      dtype: 'f16',
      algorithm: 'oneshot-ll',
      fallback: false,
      stream: s,
    })
    for (let i = 0; i < 1000; i++) call.issue()
    d.streamSynchronize(s)
    const n = REDUCED ? 1000 : 20_000
    const e0 = d.eventCreate(CU_EVENT_DEFAULT)
    const e1 = d.eventCreate(CU_EVENT_DEFAULT)
    d.eventRecord(e0, s)
    const t0 = performance.now()
    for (let i = 0; i < n; i++) call.issue()
    const hostUsPerCall = ((performance.now() - t0) * 1000) / n
    d.eventRecord(e1, s)
    d.eventSynchronize(e1)
    const deviceUsPerCall = (d.eventElapsedMs(e0, e1) * 1000) / n
    comm.checkDeviceError()
    const back = new Uint16Array(count)
    d.copyDtoH(back, outputs[5])
    const right = back.every((h) => h === 0x4800) // 8.0 in f16
    d.eventDestroy(e0)
    d.eventDestroy(e1)
    d.streamDestroy(s)
    recordCase({
      name: 'measure/eager-launch/oneshot-ll/f16/4096/8-virtual',
      passed: right && hostUsPerCall > 0,
      hostUsPerCall,
      deviceUsPerCall,
      calls: n,
    })
    assert.ok(right, 'outputs are the sum of eight ones')
  } finally {
    for (const p of free.reverse()) d.memFree(p)
    await comm.close()
  }
})
