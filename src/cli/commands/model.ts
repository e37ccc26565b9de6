import type { Command } from 'commander'

// Placeholder: replaced by the module that implements `llcomm model`.
export function register(program: Command): void {
  program.command('model').description('(not built yet)').action(() => {
    throw new Error('llcomm model is not built yet')
  })
}
