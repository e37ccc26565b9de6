// Issue 18 in per-process mode (one process per rank on one GPU through CUDA IPC; each rank has its own error word;
// cases with `recover` then call recover() on every rank and check the next call):
// a rank that makes another call than its peers, where the peers' waits for what it never sends are not armed
// (kernels/llcomm/signature.cuh, "What is left as a TIMEOUT": 16-bit twoshot-sentinel's reduce-scatter waits under
// the default placement, the one-shot peer-parallel path when every thread polls, 16-bit oneshot-sentinel after its
// 32 looks). With the in-block check (LLCOMM_SIG_IN_BLOCKS) the device records TIMEOUT on those ranks; the host reads the packets the peers stored into the rank's
// scratch (src/backends/cuda/timeout-signature.ts) and reports MISMATCH. Every rank must fail with MISMATCH naming
// both ranks and both signatures, never data and never TIMEOUT; and a rank that never calls stays a TIMEOUT. With the
// signature block (the default since round 11) every rank's device records the MISMATCH itself (detectedBy: device).
// Each case records per rank whether the host or the device found the MISMATCH (detectedBy): `host` on the main
// ranks is the gap closed (with LLCOMM_SIG_DEFERRED=1, also the host check of the last launch). Skips without
// LLCOMM_TEST_BACKEND=cuda (test/gpu/multiprocess-signature-rank.ts).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { SIGNATURE_BLOCK } from '../../src/backends/cuda/kernel-table.js'
import { runRanks } from '../process/spawn-ranks.js'
import { ON_GPU, recordCase } from './gpu-harness.js'
import { refusedCall, type SignatureCase } from './multiprocess-signature-rank.js'

const SCRIPT = fileURLToPath(new URL('./multiprocess-signature-rank.js', import.meta.url))
const TIMEOUT_MS = 4000

interface GapCase extends SignatureCase {
  name: string
  worldSize: number
}

// Counts: twoshot-sentinel at 2 ranks, 262144 elements = 16 channels of 16384, so the checker thread (511) has
// slots to reduce (mine 16 KB per channel) and checks only after its receives; one chunk (maxCountPerCall 262144).
// oneshot-sentinel's peer-parallel path needs 8 ranks on the GPU (LLCOMM_SPREAD_MIN_RANKS): 64 bf16 = 8 slots, 8
// thread groups (64 pollers, the checker at thread 511 polls nothing: 32 looks, then the full check after the polls,
// which the pollers never finish); 512 bf16 = 64 slots x 8 groups = every thread polls.
const CASES: GapCase[] = [
  {
    name: 'twoshot-bf16-vs-oneshot-bf16',
    worldSize: 2,
    main: { algorithm: 'twoshot-sentinel', dtype: 'bf16', count: 262_144 },
    odd: { algorithm: 'oneshot-sentinel', dtype: 'bf16', count: 262_144 },
    delayMs: 0,
    timeoutMs: TIMEOUT_MS,
    recover: true,
  },
  {
    name: 'twoshot-bf16-vs-twoshot-bf16-half-count',
    worldSize: 2,
    main: { algorithm: 'twoshot-sentinel', dtype: 'bf16', count: 262_144 },
    odd: { algorithm: 'twoshot-sentinel', dtype: 'bf16', count: 131_072 },
    delayMs: 0,
    timeoutMs: TIMEOUT_MS,
  },
  {
    name: 'twoshot-f16-vs-oneshot-f16',
    worldSize: 2,
    main: { algorithm: 'twoshot-sentinel', dtype: 'f16', count: 262_144 },
    odd: { algorithm: 'oneshot-sentinel', dtype: 'f16', count: 262_144 },
    delayMs: 0,
    timeoutMs: TIMEOUT_MS,
  },
  {
    name: 'oneshot-bf16-peer-parallel-after-32-looks',
    worldSize: 8,
    main: { algorithm: 'oneshot-sentinel', dtype: 'bf16', count: 64 },
    odd: { algorithm: 'oneshot-sentinel', dtype: 'bf16', count: 32 },
    delayMs: 500,
    timeoutMs: TIMEOUT_MS,
  },
  // Equal bytes and lanes (f32 x 1024 against bf16 x 2048): every data wait is satisfied, only a signature check
  // sees it: the device's (default build), or with LLCOMM_SIG_DEFERRED=1, where no kernel checks the last launch, the
  // host's check of each channel's last launch (latest-signature.ts) in checkDeviceError on every rank.
  {
    name: 'oneshot-f32-vs-oneshot-bf16-equal-bytes',
    worldSize: 2,
    main: { algorithm: 'oneshot-sentinel', dtype: 'f32', count: 1024 },
    odd: { algorithm: 'oneshot-sentinel', dtype: 'bf16', count: 2048 },
    delayMs: 0,
    timeoutMs: TIMEOUT_MS,
  },
  // An empty call (count 0) against one with data, both ways: the empty call launches the signature block alone
  // (AllReduceLauncher.prepareEmpty), so it meets the peers' call at the same signature epoch. Before, it launched
  // nothing: the others timed out, or met the empty rank's next call and returned its sum with theirs. The warm-up
  // makes the empty call on every rank first (matched empty calls, then data calls, checked).
  {
    name: 'oneshot-bf16-vs-empty',
    worldSize: 2,
    main: { algorithm: 'oneshot-sentinel', dtype: 'bf16', count: 1024 },
    odd: { algorithm: 'oneshot-sentinel', dtype: 'bf16', count: 0 },
    delayMs: 0,
    timeoutMs: TIMEOUT_MS,
    recover: true,
  },
  {
    name: 'empty-vs-twoshot-f32',
    worldSize: 4,
    main: { algorithm: 'twoshot-sentinel', dtype: 'f32', count: 0 },
    odd: { algorithm: 'twoshot-sentinel', dtype: 'f32', count: 65_536 },
    delayMs: 0,
    timeoutMs: TIMEOUT_MS,
  },
  // A call refused on the last rank (no such dtype: a typed error there before any launch): it launches the refused
  // signature alone (process-communicator.ts refuseOnDevice), so the others fail with MISMATCH naming it instead of
  // a TIMEOUT (or, had it carried on, its next call's data). The warm-up refuses it on every rank alike first.
  {
    name: 'oneshot-bf16-vs-refused',
    worldSize: 2,
    main: { algorithm: 'oneshot-sentinel', dtype: 'bf16', count: 1024 },
    odd: { algorithm: 'oneshot-sentinel', dtype: 'f64' as unknown as 'f32', count: 1024 },
    delayMs: 0,
    timeoutMs: TIMEOUT_MS,
    recover: true,
  },
  {
    name: 'oneshot-bf16-peer-parallel-every-thread-polls',
    worldSize: 8,
    main: { algorithm: 'oneshot-sentinel', dtype: 'bf16', count: 512 },
    odd: { algorithm: 'oneshot-sentinel', dtype: 'bf16', count: 256 },
    delayMs: 0,
    timeoutMs: TIMEOUT_MS,
  },
]

interface RankFailure {
  code?: string
  message?: string
  details?: Record<string, unknown>
}

async function runCase(c: GapCase) {
  const started = performance.now()
  const runs = await runRanks({
    worldSize: c.worldSize,
    scenario: 'gpu-signature',
    script: SCRIPT,
    env: { LLCOMM_TEST_CASE: JSON.stringify(c) },
    deadlineMs: 240_000,
  })
  const results = runs.map(
    (r) => r.result ?? { error: { message: `no result (code ${r.code}): ${r.stderr.slice(-2000)}` } },
  )
  return { runs, results, wallMs: performance.now() - started }
}

const describeCall = (call: { algorithm: string; dtype: string; count: number }) =>
  `${call.algorithm} ${call.dtype} sum × ${call.count} `

for (const c of CASES) {
  test(`per process, ${c.worldSize} ranks: ${c.name}: every rank fails with MISMATCH naming both signatures`, {
    skip: !ON_GPU,
  }, async () => {
    const { runs, results, wallMs } = await runCase(c)
    const odd = c.worldSize - 1
    const problems: string[] = []
    for (const [r, res] of results.entries()) {
      if (res.error) problems.push(`rank ${r}: ${JSON.stringify(res.error)}`)
      for (const p of (res.problems as string[] | undefined) ?? []) problems.push(`rank ${r}: ${p}`)
      const f = (res.failure ?? {}) as RankFailure
      const d = f.details ?? {}
      if (refusedCall(c.odd)) {
        // the refusing rank reports its refusal; every other rank MISMATCH against the refused signature
        const want = r === odd ? 'UNSUPPORTED_DTYPE' : 'MISMATCH'
        if (f.code !== want) problems.push(`rank ${r}: ${f.code} ${f.message}, not ${want}`)
        else if (r !== odd && !/refused/.test(String(d.theirs)))
          problems.push(`rank ${r}: the peer's signature reads ${String(d.theirs)}`)
        if (!((res.ms as number) < TIMEOUT_MS * 2 + 5000)) problems.push(`rank ${r}: failed after ${String(res.ms)} ms`)
        continue
      }
      if (f.code !== 'MISMATCH') {
        problems.push(`rank ${r}: ${f.code} ${f.message} (${String(d.signatureCheck ?? '')})`)
        continue
      }
      const [mineCall, theirsCall] = r === odd ? [c.odd, c.main] : [c.main, c.odd]
      if (d.rank !== r) problems.push(`rank ${r}: names rank ${String(d.rank)}`)
      if (r !== odd && d.peer !== odd) problems.push(`rank ${r}: names peer ${String(d.peer)}, not the odd rank ${odd}`)
      if (r === odd && (d.peer === odd || typeof d.peer !== 'number'))
        problems.push(`rank ${r}: peer ${String(d.peer)}`)
      if (!String(d.mine).startsWith(describeCall(mineCall ?? c.main)))
        problems.push(`rank ${r}: its own signature reads ${String(d.mine)}`)
      if (!String(d.theirs).startsWith(describeCall(theirsCall ?? c.main)))
        problems.push(`rank ${r}: the peer's signature reads ${String(d.theirs)}`)
      if (!((res.ms as number) < TIMEOUT_MS * 2 + 5000)) problems.push(`rank ${r}: failed after ${String(res.ms)} ms`)
    }
    // recover() on every rank, then the main call again: exact on every rank
    if (c.recover)
      for (const [r, res] of results.entries()) {
        const a = res.afterRecover as { code?: string; wrong?: number; message?: string } | undefined
        if (a?.code !== 'NONE' || a.wrong !== 0) problems.push(`rank ${r}, after recover(): ${JSON.stringify(a)}`)
      }
    const detectedBy = results.map((res) => {
      const d = ((res.failure ?? {}) as RankFailure).details ?? {}
      return typeof d.detectedBy === 'string' ? 'host' : 'device'
    })
    recordCase({
      name: `multiprocess/signature/${c.worldSize}r/${c.name}`,
      passed: problems.length === 0 && runs.every((r) => r.code === 0),
      detectedBy,
      hostDetected: detectedBy.filter((x) => x === 'host').length,
      deviceTimeouts: results.map((res) => ((res.failure ?? {}) as RankFailure).details?.deviceTimeout),
      messages: results.map((res) => ((res.failure ?? {}) as RankFailure).message),
      ms: results.map((res) => res.ms),
      problems: problems.slice(0, 10),
      wallMs,
    })
    assert.deepEqual(problems, [])
    for (const r of runs) assert.equal(r.code, 0, r.stderr.slice(-2000))
  })
}

test('per process, 2 ranks: a rank that never makes the call: the others fail with TIMEOUT naming it, not MISMATCH', {
  skip: !ON_GPU,
}, async () => {
  const c: GapCase = {
    name: 'twoshot-bf16-peer-never-calls',
    worldSize: 2,
    main: { algorithm: 'twoshot-sentinel', dtype: 'bf16', count: 262_144 },
    odd: null,
    delayMs: 0,
    timeoutMs: TIMEOUT_MS,
  }
  const { runs, results, wallMs } = await runCase(c)
  const f = (results[0].failure ?? {}) as RankFailure
  // The in-block check's builds: the host's reading of the packets says why it stays a TIMEOUT. With the signature
  // block (the default) the device compared them and the host reads nothing.
  const hostRead = SIGNATURE_BLOCK || /published no signature/.test(String(f.details?.signatureCheck))
  const passed = f.code === 'TIMEOUT' && f.details?.peer === 1 && hostRead && runs.every((r) => r.code === 0)
  recordCase({ name: `multiprocess/signature/2r/${c.name}`, passed, failure: f, wallMs })
  assert.equal(f.code, 'TIMEOUT', JSON.stringify(f))
  assert.equal(f.details?.peer, 1)
  if (!SIGNATURE_BLOCK) assert.match(String(f.details?.signatureCheck), /published no signature/)
  for (const r of runs) assert.equal(r.code, 0, r.stderr.slice(-2000))
})
