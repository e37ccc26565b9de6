// What one koffi call costs (docs/launch-overhead.md): a libc function bound with three uint64_t arguments, the
// shape of the launch path's cuLaunchKernelEx binding (src/ffi/launch.ts), called 2,000,000 times, 3 rounds.
//   node research/scripts/probe/koffi-call-ns.mjs
import { execSync } from 'node:child_process'
import { cpus, hostname, loadavg } from 'node:os'
import koffi from 'koffi'

const lib = koffi.load('libc.so.6')
const f = lib.func('int memcmp(uint64_t a, uint64_t b, uint64_t n)')
const buf = Buffer.alloc(16)
const addr = Number(koffi.address(buf))
const N = 2_000_000
let commit = 'unknown'
try {
  commit = execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim()
} catch {}
console.log(
  `# koffi ${koffi.version}, node ${process.version}, ${hostname()}: ${cpus()[0]?.model}, ${cpus().length} cores, load ${loadavg()[0].toFixed(2)}; commit ${commit}; ${new Date().toISOString()}`,
)
for (let r = 0; r < 3; r++) {
  const t = process.hrtime.bigint()
  for (let i = 0; i < N; i++) f(addr, addr, 0)
  console.log(`round ${r + 1}: ${(Number(process.hrtime.bigint() - t) / N).toFixed(1)} ns per call`)
}
