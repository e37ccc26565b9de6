import type { Command } from 'commander'

// Placeholder: replaced by the module that implements `llcomm tune`.
export function register(program: Command): void {
  program.command('tune').description('(not built yet)').action(() => {
    throw new Error('llcomm tune is not built yet')
  })
}
