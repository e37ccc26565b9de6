import koffi from 'koffi'
const lib = koffi.load('libc.so.6')
// a 4 x uint64 -> int function: use 'memcmp'-like signature with ints: we use labs-like call for overhead only
const f = lib.func('int memcmp(uint64_t a, uint64_t b, uint64_t n)')
const buf = Buffer.alloc(16)
const addr = Number(koffi.address(buf))
const N = 2_000_000
for (let r = 0; r < 3; r++) {
  let t = process.hrtime.bigint()
  for (let i = 0; i < N; i++) f(addr, addr, 0)
  const ns = Number(process.hrtime.bigint() - t) / N
  console.log('koffi call ns', ns.toFixed(1))
}
