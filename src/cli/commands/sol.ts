import type { Command } from 'commander'

// Placeholder: replaced by the module that implements `llcomm sol`.
export function register(program: Command): void {
  program.command('sol').description('(not built yet)').action(() => {
    throw new Error('llcomm sol is not built yet')
  })
}
