/** `llcomm --version`: the library's version and the tools' (both read from their package.json files). */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

function versionOf(packageJsonPath: string): string {
  const { version } = JSON.parse(readFileSync(packageJsonPath, 'utf8')) as { version?: unknown }
  return typeof version === 'string' ? version : 'unknown'
}

export function versionLine(): string {
  const library = versionOf(createRequire(import.meta.url).resolve('llcomm/package.json'))
  const tools = versionOf(new URL('../../../package.json', import.meta.url).pathname)
  return `llcomm ${library} (tools ${tools})`
}
