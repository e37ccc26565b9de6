/**
 * One bench run on an open communicator: plan, sweep, and wrap the rows in the docs/design.md §6 document.
 */
import type { Communicator } from 'llcomm/internal'
import { allReduceCollective, type CollectiveDescriptor } from './collective.js'
import { type BenchDocument, commandLine, currentCommit, describeMachine, queryGpuNames } from './document.js'
import { startProgress } from './progress.js'
import { formatBytes } from './sizes.js'
import { planSweep, runSweep, type SweepSettings } from './sweep.js'

export interface BenchRunOptions {
  showProgress: boolean
  command?: string
  collective?: CollectiveDescriptor
  /** cuda: the device list, to name the GPUs used. */
  devices?: readonly number[]
}

export async function measureBench(
  comm: Communicator,
  settings: SweepSettings,
  o: BenchRunOptions,
): Promise<BenchDocument> {
  const cases = planSweep(settings)
  const progress = startProgress(cases.length * (settings.repeats ?? 1), o.showProgress)
  const date = new Date().toISOString()
  // Described before the sweep: the load average of interest is the one the run started under.
  const machine = describeMachine(comm.backend === 'cuda' ? await queryGpuNames(o.devices) : undefined)
  let outcome: Awaited<ReturnType<typeof runSweep>>
  try {
    outcome = await runSweep(comm, o.collective ?? allReduceCollective, settings, cases, (c) =>
      progress.tick(
        `${c.algorithm} ${c.dtype} ${formatBytes(c.bytes)}${c.pdl === undefined ? '' : c.pdl ? ' pdl' : ' no-pdl'}`,
      ),
    )
  } finally {
    progress.stop()
  }
  const doc: BenchDocument = {
    machine,
    commit: currentCommit(),
    date,
    command: o.command ?? commandLine(),
    rows: outcome.rows,
  }
  if (outcome.skipped.length > 0) doc.skipped = outcome.skipped
  return doc
}
