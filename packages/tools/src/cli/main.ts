/**
 * The `llcomm` CLI: one small module per subcommand in ./commands, each exporting `register(program)`.
 */
import { Command } from 'commander'
import { LlcommError } from 'llcomm/internal'
import { register as registerBench } from './commands/bench.js'
import { register as registerDecode } from './commands/decode.js'
import { register as registerDiagnose } from './commands/diagnose.js'
import { register as registerLaunch } from './commands/launch.js'
import { register as registerModel } from './commands/model.js'
import { register as registerSol } from './commands/sol.js'
import { register as registerTune } from './commands/tune.js'
import { versionLine } from './version.js'

const program = new Command()
program
  .name('llcomm')
  .description('Low-latency, barrier-free collectives: bench, tune, sol, model, decode, diagnose, launch')
  .version(versionLine(), '-V, --version', 'print the library and tools versions')
for (const register of [
  registerBench,
  registerTune,
  registerSol,
  registerModel,
  registerDecode,
  registerDiagnose,
  registerLaunch,
])
  register(program)

program.parseAsync(process.argv).catch((e: unknown) => {
  const io = e as { code?: unknown; path?: unknown; syscall?: unknown; message?: unknown }
  if (e instanceof LlcommError) {
    process.stderr.write(`llcomm: ${e.code}: ${e.message}\n`)
  } else if (e instanceof Error && typeof io.code === 'string' && typeof io.path === 'string') {
    // A file the command reads or writes (--plot, --html, --json FILE, inputs): one line naming the path.
    const verb = io.syscall === 'open' || io.syscall === 'read' ? 'open' : String(io.syscall ?? 'access')
    process.stderr.write(`llcomm: cannot ${verb} ${io.path}: ${io.code} (${describeIoError(io.code)})\n`)
  } else {
    process.stderr.write(`llcomm: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
  }
  process.exitCode = 1
})

function describeIoError(code: string): string {
  const known: Record<string, string> = {
    ENOENT: 'no such file or directory',
    EACCES: 'permission denied',
    EISDIR: 'is a directory',
    ENOTDIR: 'a parent is not a directory',
    ENOSPC: 'no space left on the device',
    EROFS: 'read-only file system',
  }
  return known[code] ?? 'file system error'
}
