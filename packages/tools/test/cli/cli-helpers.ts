/** Runs the built CLI (bin/llcomm.js) in a child process and collects its exit code and output. */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const CLI = fileURLToPath(new URL('../../../bin/llcomm.js', import.meta.url))

export function runCli(
  args: string[],
  timeoutMs = 120_000,
  env: Readonly<Record<string, string>> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LLCOMM_COMMIT: 'test-commit', ...env },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(
        new Error(`llcomm ${args.join(' ')} did not finish in ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`),
      )
    }, timeoutMs)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}
