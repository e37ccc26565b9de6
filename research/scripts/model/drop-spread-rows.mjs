// Copies bench files measured before af2b920 (twoshot-sentinel without its spread path) into a folder as
// NAME-nospread.json, leaving out the twoshot-sentinel rows that the current kernel runs on its spread path
// (kernel-counts.ts: spreadWindows > 0): those rows measured the serial path, which the model no longer counts there.
// Every other row is kept as it is. The rows are counted as the 11-29 files ran (COUNTING_2026_11_29: 1 MiB buffer,
// the block targets before the 12-02 sweep, the push all-gather, 16-bit accumulation). The 2026-12-01 refit (research/scripts/model/refit-spread-2026-12-01.sh):
//   node research/scripts/model/drop-spread-rows.mjs OUT_DIR FILE...   (after npm run build)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { COUNTING_2026_11_29, kernelCounts } from '../../../packages/tools/dist/src/model/kernel-counts.js'

const [outDir, ...files] = process.argv.slice(2)
if (!outDir || files.length === 0) {
  console.error('usage: drop-spread-rows.mjs OUT_DIR FILE...')
  process.exit(2)
}
mkdirSync(outDir, { recursive: true })
for (const file of files) {
  const doc = JSON.parse(readFileSync(file, 'utf8'))
  const spread = (r) =>
    r.algorithm === 'twoshot-sentinel' && kernelCounts(r.algorithm, 'twoshot', r.ranks, r.bytes, r.dtype, COUNTING_2026_11_29).spreadWindows > 0
  const kept = doc.rows.filter((r) => !spread(r))
  const dropped = doc.rows.length - kept.length
  doc.rows = kept
  doc.droppedRows = { count: dropped, from: file, why: 'twoshot-sentinel rows the kernel now runs on its spread path' }
  writeFileSync(join(outDir, basename(file).replace(/\.json$/, '-nospread.json')), `${JSON.stringify(doc, null, 1)}\n`)
  console.error(`${file}: ${kept.length} rows kept, ${dropped} dropped`)
}
