/**
 * The `llcomm` CLI: one small module per subcommand in ./commands, each exporting `register(program)`.
 */
import { Command } from 'commander'
import { LlcommError } from '../errors.js'
import { register as registerBench } from './commands/bench.js'
import { register as registerDecode } from './commands/decode.js'
import { register as registerDiagnose } from './commands/diagnose.js'
import { register as registerLaunch } from './commands/launch.js'
import { register as registerModel } from './commands/model.js'
import { register as registerSol } from './commands/sol.js'
import { register as registerTune } from './commands/tune.js'

const program = new Command()
program.name('llcomm').description('Low-latency, barrier-free collectives: bench, tune, sol, model, decode, diagnose')
for (const register of [registerBench, registerTune, registerSol, registerModel, registerDecode, registerDiagnose])
  register(program)
registerLaunch(program)

program.parseAsync(process.argv).catch((e: unknown) => {
  if (e instanceof LlcommError) {
    process.stderr.write(`llcomm: ${e.code}: ${e.message}\n`)
  } else {
    process.stderr.write(`llcomm: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
  }
  process.exitCode = 1
})
