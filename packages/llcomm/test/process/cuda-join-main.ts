// One rank of a cuda per-process communicator that only joins (test/process/cuda-process-setup.test.ts): started
// by spawn-ranks.ts with LLCOMM_RANK, LLCOMM_WORLD_SIZE and LLCOMM_RENDEZVOUS set, it prints `RESULT {...}` with the
// join's error (its code, message and details) or `joined: true`, then exits. Each rank is a process of its own, so
// each reads its own environment (the settings that the rendezvous config must agree on).
import { createCommunicator } from '../../src/create.js'
import { isLlcommError } from '../../src/errors.js'

const rank = Number(process.env.LLCOMM_RANK)
let result: Record<string, unknown>
try {
  const comm = await createCommunicator({ backend: 'cuda', rendezvous: 'env', timeoutMs: 15_000 })
  result = { joined: true }
  await comm.destroy()
} catch (e) {
  result = isLlcommError(e)
    ? { joinError: { code: e.code, message: e.message, details: e.details } }
    : { joinError: { code: 'UNEXPECTED', message: String(e) } }
}
process.stdout.write(`RESULT ${JSON.stringify({ rank, ...result })}\n`)
