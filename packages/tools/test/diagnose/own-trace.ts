// llcomm's own trace format for the diagnose tests: events with stream, start, duration and an optional collective.
import { parseTraceText } from '../../src/diagnose/read-trace.js'

export type Ev = {
  name: string
  stream: string
  startUs: number
  durUs: number
  collective?: { name: string; bytes: number; ranks?: number }
}

/** The events as the text of an llcomm trace file. */
export const ownText = (events: Ev[]) => JSON.stringify({ llcommTrace: 1, events })

/** The events as a parsed trace. */
export const ownTrace = (events: Ev[]) => parseTraceText(ownText(events))
