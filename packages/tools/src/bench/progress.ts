/**
 * A progress bar on stderr (cli-progress) while a sweep runs: on when stderr is a terminal or when asked with
 * --progress, off with --no-progress. stdout stays clean for the table or the JSON.
 */
import cliProgress from 'cli-progress'

export interface SweepProgress {
  tick(label: string): void
  stop(): void
}

export function shouldShowProgress(requested: boolean | undefined): boolean {
  return requested ?? Boolean(process.stderr.isTTY)
}

export function startProgress(total: number, enabled: boolean): SweepProgress {
  if (!enabled) return { tick: () => {}, stop: () => {} }
  const bar = new cliProgress.SingleBar(
    {
      format: 'bench [{bar}] {value}/{total} {case}',
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: true,
      noTTYOutput: !process.stderr.isTTY,
      notTTYSchedule: 2000,
    },
    cliProgress.Presets.shades_classic,
  )
  bar.start(total, 0, { case: '' })
  return {
    tick: (label) => bar.increment(1, { case: label }),
    stop: () => bar.stop(),
  }
}
