// The tools' defaults read only what the package ships (issue 16, item 6): from an installed package there is no
// bench/results or research/ folder, so a default that pointed there failed with "cannot read …/bench/results/…".
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, sep } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { DECODE_SHARDS_URL } from '../../src/model/decode-calibration.js'
import { DECODE_TP_URL } from '../../src/model/decode-tp.js'
import { ALGORITHMS_URL, PLATFORMS_URL } from '../../src/model/latency-tables.js'
import { REPO_ROOT } from '../support/paths.js'
import { CLI } from './cli-helpers.js'

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const TRACE = join(REPO, 'test/fixtures/traces/torch-llama-decode-h200x2-tp2.rank0.trace.json.gz')

/** The package.json nearest above a file, and the path of the file relative to that package. */
function owningPackage(file: string): { files: string[]; relativePath: string } {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json')
    if (existsSync(manifest)) {
      const files = (JSON.parse(readFileSync(manifest, 'utf8')) as { files?: string[] }).files ?? []
      return { files, relativePath: relative(dir, file) }
    }
    assert.notEqual(dirname(dir), dir, `no package.json above ${file}`)
  }
}

/** Runs the built CLI in a fresh empty folder, as a user of an installed package would. */
function runInEmptyFolder(args: string[]) {
  const cwd = mkdtempSync(join(tmpdir(), 'llcomm-defaults-'))
  return spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', timeout: 120_000 })
}

describe('tool defaults read shipped data', () => {
  it('every default data file exists and lies in a folder its package ships ("files")', () => {
    for (const url of [DECODE_SHARDS_URL, DECODE_TP_URL, PLATFORMS_URL, ALGORITHMS_URL]) {
      const file = fileURLToPath(url)
      assert.ok(existsSync(file), `${file} is missing`)
      const { files, relativePath } = owningPackage(file)
      const top = relativePath.split(sep)[0]
      assert.ok(files.includes(top), `${relativePath}: '${top}' is not in the package's "files" (${files.join(', ')})`)
      assert.doesNotMatch(relativePath, /^(bench|research|test|scripts)\b/)
    }
  })

  it('no source file names a path under bench/results or research/ as a string (a default read at run time)', () => {
    const offenders: string[] = []
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name)
        if (statSync(path).isDirectory()) walk(path)
        else if (name.endsWith('.ts'))
          // a quoted string that starts with the folder (optionally after ../): a path, not a mention in prose
          for (const [i, line] of readFileSync(path, 'utf8').split('\n').entries())
            if (/['"`](\.\.\/)*(bench\/results|research)(\/|['"`])/.test(line))
              offenders.push(`${relative(REPO, path)}:${i + 1}`)
      }
    }
    walk(join(REPO, 'src'))
    assert.deepEqual(offenders, [])
  })

  it('llcomm model --validate-decode and --validate-decode-tp work from an empty folder', () => {
    const shards = runInEmptyFolder(['model', '--validate-decode', '--json'])
    assert.equal(shards.status, 0, shards.stderr)
    assert.ok(JSON.parse(shards.stdout).validateDecode, shards.stdout.slice(0, 200))
    const tp = runInEmptyFolder(['model', '--validate-decode-tp', '--json'])
    assert.equal(tp.status, 0, tp.stderr)
    assert.ok(JSON.parse(tp.stdout).validateDecodeTp, tp.stdout.slice(0, 200))
  })

  it('a named file that is not there is a clear error naming it', () => {
    const missing = join(tmpdir(), 'llcomm-no-such-shards.json')
    const r = runInEmptyFolder(['model', '--validate-decode', missing])
    assert.notEqual(r.status, 0)
    assert.match(r.stderr, new RegExp(`cannot read ${missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`))
    assert.doesNotMatch(r.stderr, /bench\/results/)
  })

  it('llcomm diagnose reads no bench file it was not given, whatever the folder it runs in', () => {
    // run in the repository root, where bench/results exists: it must not be read
    const r = spawnSync(process.execPath, [CLI, 'diagnose', TRACE, '--json'], { cwd: REPO_ROOT, encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr)
    const whatIf = JSON.parse(r.stdout).whatIf
    assert.equal(whatIf.available, false)
    assert.match(whatIf.reason, /no bench results and no model platform given/)
    const priced = spawnSync(process.execPath, [CLI, 'diagnose', TRACE, '--json', '--platform', 'h200'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    })
    assert.equal(priced.status, 0, priced.stderr)
    assert.ok(JSON.parse(priced.stdout).whatIf.rows.length > 0)
  })
})
