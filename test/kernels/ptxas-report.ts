/** Per-kernel resource usage from `ptxas -v` output (nvcc -Xptxas -v prints it on stderr). */
export interface KernelResources {
  kernel: string
  registers: number
  stackFrameBytes: number
  spillStoreBytes: number
  spillLoadBytes: number
}

export function parsePtxasReport(text: string): KernelResources[] {
  const out: KernelResources[] = []
  let current: KernelResources | undefined
  for (const line of text.split('\n')) {
    const entry = /Compiling entry function '([^']+)'/.exec(line)
    if (entry) {
      current = { kernel: entry[1], registers: -1, stackFrameBytes: -1, spillStoreBytes: -1, spillLoadBytes: -1 }
      out.push(current)
      continue
    }
    if (!current) continue
    const frame = /(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads/.exec(line)
    if (frame) {
      current.stackFrameBytes = Number(frame[1])
      current.spillStoreBytes = Number(frame[2])
      current.spillLoadBytes = Number(frame[3])
    }
    const regs = /Used (\d+) registers/.exec(line)
    if (regs) current.registers = Number(regs[1])
  }
  return out
}
