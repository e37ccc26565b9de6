/**
 * Where a tool's result goes: the readable report on stdout (and the JSON document into --json's file), or, with a
 * bare --json, the JSON on stdout and the report on stderr, so a pipe gets clean JSON.
 */
import { writeFileSync } from 'node:fs'

export function emitReport(doc: unknown, report: string, json: string | boolean | undefined): void {
  const text = `${JSON.stringify(doc, null, 2)}\n`
  if (json === true) {
    process.stdout.write(text)
    process.stderr.write(report)
  } else {
    process.stdout.write(report)
    if (typeof json === 'string') writeFileSync(json, text)
  }
}
