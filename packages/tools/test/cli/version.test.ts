// `llcomm --version` names the library's version and the tools' (each from its package.json).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { repoPath, toolsPath } from '../support/paths.js'
import { CLI } from './cli-helpers.js'

test('llcomm --version prints the library and tools versions', () => {
  const library = JSON.parse(readFileSync(repoPath('packages/llcomm/package.json'), 'utf8')).version
  const tools = JSON.parse(readFileSync(toolsPath('package.json'), 'utf8')).version
  for (const flag of ['--version', '-V']) {
    const r = spawnSync(process.execPath, [CLI, flag], { encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout.trim(), `llcomm ${library} (tools ${tools})`)
  }
})
