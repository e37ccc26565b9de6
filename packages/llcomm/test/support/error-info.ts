/** A thrown value as a plain object for a rank's RESULT line: an LlcommError's code, message and details. */
import { LlcommError } from '../../src/errors.js'

export function errorInfo(e: unknown): { code: string; message: string; details?: Record<string, unknown> } {
  if (e instanceof LlcommError) return { code: e.code, message: e.message, details: e.details }
  return { code: 'UNEXPECTED', message: e instanceof Error ? (e.stack ?? e.message) : String(e) }
}
