// The commit a bench, tune or sol document records: LLCOMM_COMMIT, else git's HEAD with '+dirty' when tracked files
// differ from it (the GPU machine's copy of the tree may carry an older .git), else 'unknown'.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { currentCommit } from '../../src/bench/document.js'

test('currentCommit: HEAD, +dirty when a tracked file changed, the environment first, unknown outside git', () => {
  const saved = process.env.LLCOMM_COMMIT
  delete process.env.LLCOMM_COMMIT
  try {
    const dir = mkdtempSync(join(tmpdir(), 'llcomm-commit-'))
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: dir, encoding: 'utf8' }).trim()
    assert.equal(currentCommit(dir), 'unknown') // not a repository yet
    git('init', '-q')
    writeFileSync(join(dir, 'a.txt'), 'one\n')
    git('add', 'a.txt')
    git('commit', '-q', '-m', 'first')
    const head = git('rev-parse', 'HEAD')
    assert.equal(currentCommit(dir), head)
    writeFileSync(join(dir, 'untracked.txt'), 'x\n') // untracked files do not make the tree dirty
    assert.equal(currentCommit(dir), head)
    writeFileSync(join(dir, 'a.txt'), 'two\n')
    assert.equal(currentCommit(dir), `${head}+dirty`)
    process.env.LLCOMM_COMMIT = 'abc1234'
    assert.equal(currentCommit(dir), 'abc1234')
  } finally {
    if (saved === undefined) delete process.env.LLCOMM_COMMIT
    else process.env.LLCOMM_COMMIT = saved
  }
})
