/**
 * The tools' GPU tests record their cases like the library's (packages/llcomm/test/gpu/gpu-harness.ts): one JSON
 * line per case in $LLCOMM_GPU_RESULTS, summarized by scripts/gpu-summary.mjs.
 */
import { appendFileSync } from 'node:fs'

export const ON_GPU = process.env.LLCOMM_TEST_BACKEND === 'cuda'

export function recordCase(rec: { name: string; passed: boolean; [key: string]: unknown }): void {
  const file = process.env.LLCOMM_GPU_RESULTS
  if (file) appendFileSync(file, `${JSON.stringify({ ...rec, at: new Date().toISOString() })}\n`)
}
