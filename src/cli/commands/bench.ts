import type { Command } from 'commander'

// Placeholder: replaced by the module that implements `llcomm bench`.
export function register(program: Command): void {
  program.command('bench').description('(not built yet)').action(() => {
    throw new Error('llcomm bench is not built yet')
  })
}
