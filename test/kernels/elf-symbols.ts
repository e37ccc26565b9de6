/**
 * The function symbols of an ELF64 little-endian file (a cubin), read from its SHT_SYMTAB section. Enough to check
 * that every kernel name of the table is in the compiled cubin without cuobjdump.
 */
export interface ElfSymbol {
  name: string
  /** STT_* type: 2 = FUNC. */
  type: number
  /** STB_* binding: 1 = GLOBAL. */
  binding: number
  size: bigint
}

const SHT_SYMTAB = 2

function cString(b: Buffer, at: number): string {
  let end = at
  while (end < b.length && b[end] !== 0) end++
  return b.toString('latin1', at, end)
}

export function elfSymbols(file: Buffer): ElfSymbol[] {
  if (file.length < 64 || file.readUInt32BE(0) !== 0x7f454c46) throw new Error('not an ELF file')
  if (file[4] !== 2 || file[5] !== 1) throw new Error('not a 64-bit little-endian ELF file')
  const shoff = Number(file.readBigUInt64LE(0x28))
  const shentsize = file.readUInt16LE(0x3a)
  const shnum = file.readUInt16LE(0x3c)
  const section = (i: number) => {
    const at = shoff + i * shentsize
    return {
      type: file.readUInt32LE(at + 4),
      offset: Number(file.readBigUInt64LE(at + 0x18)),
      size: Number(file.readBigUInt64LE(at + 0x20)),
      link: file.readUInt32LE(at + 0x28),
      entsize: Number(file.readBigUInt64LE(at + 0x38)),
    }
  }
  const out: ElfSymbol[] = []
  for (let i = 0; i < shnum; i++) {
    const s = section(i)
    if (s.type !== SHT_SYMTAB) continue
    const strtab = section(s.link)
    const entsize = s.entsize || 24
    for (let at = s.offset; at + entsize <= s.offset + s.size; at += entsize) {
      const info = file[at + 4]
      out.push({
        name: cString(file, strtab.offset + file.readUInt32LE(at)),
        type: info & 0xf,
        binding: info >> 4,
        size: file.readBigUInt64LE(at + 16),
      })
    }
  }
  return out
}
