#!/usr/bin/env node
// Runs every compiled test of both packages (packages/*/dist/test) and of the repository (dist-test) except the GPU tests (test/gpu/, run by hand on
// the GPU machine with LLCOMM_TEST_BACKEND=cuda, which runs only those). Node 20's test runner takes no glob
// patterns, hence this list. Extra arguments are passed through.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const packagesDir = new URL('../packages/', import.meta.url).pathname
const gpu = process.env.LLCOMM_TEST_BACKEND === 'cuda'
function collect(dir, root, out) {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) {
      if ((name === 'gpu') !== gpu && dir === root) continue
      collect(path, root, out)
    } else if (name.endsWith('.test.js')) out.push(path)
  }
  return out
}
const files = []
// The repository's own tests (test/: kernels of both packages, examples, the packed package) build into dist-test/.
const roots = [
  new URL('../dist-test/', import.meta.url).pathname,
  ...readdirSync(packagesDir)
    .sort()
    .map((pkg) => join(packagesDir, pkg, 'dist', 'test')),
]
for (const root of roots) if (existsSync(root)) collect(root, root, files)
if (files.length === 0) {
  console.error(`no test files under ${packagesDir}*/dist/test: run npm run build first`)
  process.exit(1)
}
const args = ['--test', `--test-concurrency=${gpu ? 1 : 2}`, ...process.argv.slice(2), ...files]
const r = spawnSync(process.execPath, args, { stdio: 'inherit' })
process.exit(r.status ?? 1)
