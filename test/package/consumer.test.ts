/**
 * The library as a user installs it: packs packages/llcomm (npm pack), installs the tarball into a fresh project
 * outside the repository (test/consumer: package.json, a strict tsconfig without @types/node, engine.ts using every
 * public name of the CPU and GPU paths), then checks that
 *   - koffi is the only dependency that comes with it (no vega, commander or cli-progress),
 *   - engine.ts type-checks against the shipped .d.ts files with skipLibCheck off,
 *   - the installed package runs an AllReduce on the CPU backend and finds its shipped data.
 * npm reuses its cache (the root install already fetched koffi), so this takes seconds, not a download.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const REPO = fileURLToPath(new URL('../../', import.meta.url))
const CONSUMER_SOURCES = join(REPO, 'test', 'consumer')
const TSC = join(REPO, 'node_modules', 'typescript', 'bin', 'tsc')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

let work = ''
let tarball = ''
interface PackResult {
  filename: string
  files: { path: string }[]
  size: number
  unpackedSize: number
}
let packed: PackResult | undefined

function bytesUnder(dir: string): number {
  let total = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    total += e.isDirectory() ? bytesUnder(p) : statSync(p).size
  }
  return total
}

before(() => {
  work = mkdtempSync(join(tmpdir(), 'llcomm-consumer-'))
  const out = execFileSync(npm, ['pack', '--json', '--pack-destination', work, join(REPO, 'packages', 'llcomm')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const result = (JSON.parse(out) as PackResult[])[0]
  packed = result
  tarball = join(work, result.filename)
  for (const f of ['package.json', 'tsconfig.json', 'engine.ts']) copyFileSync(join(CONSUMER_SOURCES, f), join(work, f))
  execFileSync(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', tarball], {
    cwd: work,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
})

after(() => {
  if (work) rmSync(work, { recursive: true, force: true })
})

test('the packed library brings koffi and nothing else', (t) => {
  const installed = readdirSync(join(work, 'node_modules')).filter((n) => !n.startsWith('.'))
  assert.deepEqual(installed.sort(), ['koffi', 'llcomm'])
  for (const tool of ['vega', 'vega-lite', 'commander', 'cli-progress'])
    assert.ok(!installed.includes(tool), `${tool} came with the library`)
  const files = packed?.files ?? []
  assert.ok(
    files.some((f) => f.path === 'LICENSE'),
    'LICENSE is shipped',
  )
  assert.ok(
    files.some((f) => f.path.startsWith('kernels/allreduce/')),
    'the collective kernels are shipped',
  )
  assert.ok(!files.some((f) => f.path.includes('/test/') || f.path.startsWith('dist/test')), 'no tests are shipped')
  t.diagnostic(
    `llcomm tarball: ${files.length} files, ${packed?.size} bytes packed, ${packed?.unpackedSize} unpacked; ` +
      `installed with its dependencies: ${bytesUnder(join(work, 'node_modules'))} bytes`,
  )
})

test('a strict consumer without @types/node type-checks against every public name', () => {
  try {
    execFileSync(process.execPath, [TSC, '-p', join(work, 'tsconfig.json')], { cwd: work, encoding: 'utf8' })
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string }
    assert.fail(`tsc failed in the consumer project:\n${err.stdout ?? ''}${err.stderr ?? ''}`)
  }
})

test('the installed package runs an AllReduce on the CPU backend', () => {
  const script = [
    "import { createCommunicator } from 'llcomm'",
    "const comm = await createCommunicator({ backend: 'cpu', ranks: 2 })",
    "const out = await comm.allReduce([Float32Array.of(1, 2), Float32Array.of(3, 4)], { algorithm: 'auto' })",
    'await comm.close()',
    'console.log(JSON.stringify({ sum: Array.from(out[1]), algorithm: out.info.algorithm }))',
  ].join('\n')
  const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: work, encoding: 'utf8' })
  const got = JSON.parse(stdout) as { sum: number[]; algorithm: string }
  assert.deepEqual(got.sum, [4, 6])
  assert.ok(got.algorithm.length > 0)
})
