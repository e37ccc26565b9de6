// src/ffi/shared-memory.ts: the facts the one-process-per-rank CPU path rests on. A koffi view over an mmap'd
// segment is an ArrayBuffer that is not shared, so Atomics.wait refuses it (hence the futex); Atomics.add works
// on it and is seen through a second mapping of the same segment; futexWait returns at once on a changed word and
// after its timeout otherwise; an unlinked name is gone from /dev/shm while the mappings stay usable.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { futexWait, futexWake, listSegments, SharedMemorySegment } from '../../src/ffi/shared-memory.js'

test('two mappings of one segment: Atomics on both, no Atomics.wait, futex wait and wake, unlink leaves the memory', () => {
  const name = `/llcomm-${process.pid}-${randomBytes(4).toString('hex')}`
  const a = SharedMemorySegment.create(name, 4096)
  const b = SharedMemorySegment.open(name, 4096)
  try {
    assert.ok(!(a.buffer instanceof SharedArrayBuffer))
    assert.notEqual(a.address, b.address, 'two mappings, two addresses')
    const ia = new Int32Array(a.buffer)
    const ib = new Int32Array(b.buffer)
    assert.throws(() => Atomics.wait(ia, 0, 0, 1), TypeError, 'Atomics.wait refuses a non-shared buffer')
    Atomics.add(ia, 3, 5)
    assert.equal(Atomics.load(ib, 3), 5, 'the same physical page')
    assert.equal(futexWait(b.address + 12, 4, 1000), 'changed', 'the word is 5, not 4: returns at once')
    const started = performance.now()
    assert.equal(futexWait(b.address + 12, 5, 30), 'timeout')
    assert.ok(performance.now() - started >= 25)
    assert.equal(futexWake(a.address + 12), 0, 'nobody waits')
    a.unlink()
    assert.equal(listSegments().includes(name.slice(1)), false)
    Atomics.add(ib, 3, 1)
    assert.equal(Atomics.load(ia, 3), 6, 'the mappings outlive the name')
    assert.throws(
      () => SharedMemorySegment.open(name, 4096),
      (e) => (e as { code?: string }).code === 'SYSTEM_ERROR',
    )
  } finally {
    a.unlink()
    a.unmap()
    b.unmap()
  }
})
