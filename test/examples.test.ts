// The numbered examples run as tests: each must exit 0 (they check their own results).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const dir = fileURLToPath(new URL('../examples/dist/', import.meta.url))
const examples = readdirSync(dir).filter((f) => /^\d\d-.*\.js$/.test(f))

test('there are examples to run', () => {
  assert.ok(examples.length >= 3)
})

for (const file of examples) {
  test(`example ${file} runs and exits 0`, () => {
    const r = spawnSync(process.execPath, [dir + file], { encoding: 'utf8', timeout: 120_000 })
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`)
    assert.ok(r.stdout.length > 0)
  })
}
