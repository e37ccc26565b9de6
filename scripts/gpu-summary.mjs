#!/usr/bin/env node
// Summarizes the GPU test's JSON-lines cases into gpu-test-<date>.json.gz and prints a short table last. Gzipped: the
// record of every case is ~1 MB of JSON, and the working tree travels to the GPU machine under a 64 MiB limit.
// Usage: node scripts/gpu-summary.mjs <cases.jsonl> <outDir> [wallSeconds]
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'

const [casesFile, outDir, wall] = process.argv.slice(2)
const lines = readFileSync(casesFile, 'utf8').split('\n').filter(Boolean)
const details = lines.map((l) => JSON.parse(l))
const sh = (cmd, args) => {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8' }).trim()
  } catch {
    return undefined
  }
}
const smi = sh('nvidia-smi', ['--query-gpu=name,driver_version', '--format=csv,noheader'])
const machine = {
  gpus: smi
    ? smi.split('\n').map((l) => {
        const [name, driver] = l.split(',').map((s) => s.trim())
        return { name, driver }
      })
    : [],
  sanitizer: sh('compute-sanitizer', ['--version'])?.split('\n').pop(),
  node: process.version,
}
const date = new Date().toISOString()
const passed = details.filter((c) => c.passed).length
const summary = {
  machine,
  commit: process.env.LLCOMM_COMMIT ?? 'unknown (set LLCOMM_COMMIT)',
  date,
  wallSeconds: wall ? Number(wall) : undefined,
  cases: details.length,
  passed,
  failed: details.length - passed,
  details,
}
const file = join(outDir, `gpu-test-${date.slice(0, 10)}.json.gz`)
writeFileSync(file, gzipSync(JSON.stringify(summary, null, 1), { level: 9 }))
// Short table by group (the name's first one or two parts).
const groups = new Map()
for (const c of details) {
  const parts = c.name.split('/')
  const key = parts[0].startsWith('sanitizer-')
    ? parts[0]
    : parts.slice(0, parts[0].startsWith('virtual') || parts[0].startsWith('gpus') ? 2 : 1).join('/')
  const g = groups.get(key) ?? { pass: 0, fail: 0, firstFail: '' }
  if (c.passed) g.pass++
  else {
    g.fail++
    g.firstFail ||= `${c.name}${c.error ? `: ${String(c.error).slice(0, 80)}` : ''}`
  }
  groups.set(key, g)
}
console.log(`\nwrote ${file}`)
console.log(
  `machine: ${machine.gpus.map((g) => `${g.name} (driver ${g.driver})`).join(', ')}; commit ${summary.commit}; ${date}`,
)
console.log('group                                   pass  fail  first failure')
for (const [k, g] of groups)
  console.log(`${k.padEnd(40)}${String(g.pass).padStart(4)}  ${String(g.fail).padStart(4)}  ${g.firstFail}`)
console.log(`TOTAL cases ${summary.cases}, passed ${summary.passed}, failed ${summary.failed}`)
