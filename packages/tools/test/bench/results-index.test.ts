// bench/results keeps only the measurements the product cites, each with a row in bench/results/INDEX.md (what,
// machine, date, commit, command); a run added without a row, or a row left for a file that moved to research/,
// fails here.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { repoPath } from '../support/paths.js'

const RESULTS = repoPath('bench/results/')

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path) : [relative(RESULTS, path)]
  })
}

test('bench/results/INDEX.md has one row per file, and each row a file', () => {
  const rows = readFileSync(join(RESULTS, 'INDEX.md'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| file |'))
    .map((line) => line.split('|').map((cell) => cell.trim()))
  const named = rows.map((cells) => cells[1])
  const files = filesUnder(RESULTS).filter((f) => f !== 'INDEX.md')
  assert.deepEqual([...named].sort(), [...files].sort())
  // every row fills its columns: what, machine, date, commit, command, cited by
  for (const cells of rows)
    assert.ok(
      cells.slice(1, 8).every((c) => c.length > 0 && c !== '?'),
      cells.join(' | '),
    )
})
