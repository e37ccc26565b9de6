/**
 * Whether a process on this host still runs: kill(pid, 0), then /proc/<pid>/stat so that a zombie (dead, not
 * yet reaped by its parent) counts as dead. Used by the waits of one-process-per-rank channels to turn a dead
 * peer into PEER_FAILED long before the deadline (RankControl, WaitOptions.peerAlive).
 */
import { readFileSync } from 'node:fs'

export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
  } catch (e) {
    // EPERM: it exists but belongs to someone else.
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    // Field 3, after "pid (comm) ": comm may hold spaces and parentheses, so look after the last ')'.
    const state = stat.charAt(stat.lastIndexOf(')') + 2)
    return state !== 'Z' && state !== 'X'
  } catch {
    // No /proc (not Linux) but kill succeeded: alive. ENOENT after a successful kill: it just died.
    return process.platform !== 'linux'
  }
}
