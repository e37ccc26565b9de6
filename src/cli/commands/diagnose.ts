import type { Command } from 'commander'

// Placeholder: replaced by the module that implements `llcomm diagnose`.
export function register(program: Command): void {
  program.command('diagnose').description('(not built yet)').action(() => {
    throw new Error('llcomm diagnose is not built yet')
  })
}
