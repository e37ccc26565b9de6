/**
 * Paths the tools' tests read: the tools package's own files, and the repository's committed measurements
 * (bench/results at the repository root, two folders above the package). This file is
 * packages/tools/dist/test/support/paths.js when it runs.
 */
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** packages/tools */
export const TOOLS_ROOT = fileURLToPath(new URL('../../../', import.meta.url))
/** The repository root. */
export const REPO_ROOT = fileURLToPath(new URL('../../../../../', import.meta.url))

/** A path under the repository root, e.g. repoPath('bench/results/x.json'). */
export function repoPath(path: string): string {
  return join(REPO_ROOT, path)
}

/** A path under the tools package, e.g. toolsPath('test/fixtures/model/x.json'). */
export function toolsPath(path: string): string {
  return join(TOOLS_ROOT, path)
}
