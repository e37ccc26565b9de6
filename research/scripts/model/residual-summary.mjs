// Per-algorithm summary of `llcomm model --calibrate … --json` output (read from stdin or the file named): rows within
// ±15%, rms and max |error| in sample (or, with nothing fitted, the table's prediction) and for each held-out residual the fit computed (row, rank count, size class,
// dtype out), then the rows outside ±15% in sample, largest first. Used by research/scripts/model/refit-*.sh.
//   node packages/tools/bin/llcomm.js model --calibrate … --json | node research/scripts/model/residual-summary.mjs
import { readFileSync } from 'node:fs'

const text = readFileSync(process.argv[2] ?? 0, 'utf8')
const doc = JSON.parse(text)
const KINDS = [
  ['relError', 'in sample'],
  ['looRelError', 'row out'],
  ['lorcoRelError', 'rank count out'],
  ['losdoRelError', 'size class out'],
  ['lodtoRelError', 'dtype out'],
]
const pct = (x) => `${(100 * x).toFixed(1)}%`
const summary = (errors) => {
  const n = errors.length
  const within = errors.filter((e) => Math.abs(e) <= 0.15).length
  const rms = Math.sqrt(errors.reduce((s, e) => s + e * e, 0) / n)
  const max = Math.max(...errors.map(Math.abs))
  return `${within}/${n}, rms ${pct(rms)}, max ${pct(max)}`
}
const size = (b) => (b >= 1 << 20 ? `${b / (1 << 20)}M` : b >= 1024 ? `${b / 1024}K` : `${b}`)
for (const cal of doc.calibrations) {
  const rows = cal.residuals
  // nothing fitted (--fit none): the residuals are the table's predictions, out of sample
  const kinds = KINDS.filter(([k]) => rows.some((r) => r[k] !== undefined)).map(([k, name]) =>
    k === 'relError' && cal.fitted.length === 0 ? [k, 'nothing fitted'] : [k, name],
  )
  console.log(`## ${cal.platform}: ${rows.length} rows (q = ${cal.overlapExponent})`)
  if (cal.fitted.length > 0) {
    console.log(`fitted: ${cal.fitted.map((p) => `${p} ${Number(cal.params[p]).toPrecision(4)}`).join(', ')}`)
    if (cal.notIdentified.length > 0) console.log(`not identified (table's value): ${cal.notIdentified.join(', ')}`)
    for (const s of cal.overlapExponentScan ?? [])
      console.log(`  q = ${s.overlapExponent}: ${s.within15}/${s.rows} within ±15%, rms ${pct(s.rmsRelError)}`)
  }
  const algorithms = [...new Set(rows.map((r) => r.algorithm))]
  const header = ['algorithm', ...kinds.map(([, name]) => name)]
  const lines = [['all', ...kinds.map(([k]) => summary(rows.map((r) => r[k])))]]
  for (const a of algorithms) {
    const of = rows.filter((r) => r.algorithm === a)
    lines.push([a, ...kinds.map(([k]) => summary(of.map((r) => r[k])))])
  }
  for (const dtype of [...new Set(rows.map((r) => r.dtype ?? 'bf16'))]) {
    const of = rows.filter((r) => (r.dtype ?? 'bf16') === dtype)
    lines.push([`(${dtype})`, ...kinds.map(([k]) => summary(of.map((r) => r[k])))])
  }
  console.log(`| ${header.join(' | ')} |`)
  console.log(`|${header.map(() => '---').join('|')}|`)
  for (const l of lines) console.log(`| ${l.join(' | ')} |`)
  const out = rows.filter((r) => Math.abs(r.relError) > 0.15).sort((x, y) => Math.abs(y.relError) - Math.abs(x.relError))
  console.log(`\noutside ±15%${cal.fitted.length === 0 ? '' : ' in sample'}: ${out.length}`)
  for (const r of out)
    console.log(
      `  ${r.algorithm} ${r.dtype ?? 'bf16'} ${r.ranks} ranks ${size(r.bytes)}: measured ${r.measuredUs.toFixed(2)} us, predicted ${r.predictedUs.toFixed(2)} (${r.relError > 0 ? '+' : ''}${pct(r.relError)})`,
    )
  console.log()
}
