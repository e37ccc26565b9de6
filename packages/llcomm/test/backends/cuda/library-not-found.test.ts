// The FFI's library search fails with LIBRARY_NOT_FOUND listing every place searched (no GPU needed).
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { isLlcommError } from '../../../src/errors.js'
import { type LibrarySpec, loadLibrary } from '../../../src/ffi/index.js'

test('a library that is nowhere gives LIBRARY_NOT_FOUND naming the env var and every place searched', () => {
  const dir = mkdtempSync(join(tmpdir(), 'llcomm-lib-'))
  const spec: LibrarySpec = {
    name: 'libllcomm-does-not-exist',
    envVar: 'LLCOMM_TEST_NO_SUCH_LIB',
    sonames: ['libllcomm-does-not-exist.so'],
    directories: () => [dir, join(dir, 'nope')],
  }
  process.env.LLCOMM_TEST_NO_SUCH_LIB = join(dir, 'explicit.so')
  try {
    assert.throws(
      () => loadLibrary(spec),
      (e: unknown) => {
        assert.ok(isLlcommError(e, 'LIBRARY_NOT_FOUND'))
        const searched = e.details.searched as string[]
        assert.ok(searched.includes(join(dir, 'explicit.so')), 'the env var path is tried first')
        assert.ok(
          searched.some((s) => s.startsWith(dir)),
          'the directories are listed',
        )
        assert.ok(searched.includes('libllcomm-does-not-exist.so'), 'the loader search by soname is listed')
        assert.match(e.message, /LLCOMM_TEST_NO_SUCH_LIB/)
        return true
      },
    )
  } finally {
    delete process.env.LLCOMM_TEST_NO_SUCH_LIB
  }
})

test('a file that exists but is not a shared library is reported with the loader error, then not found', () => {
  const dir = mkdtempSync(join(tmpdir(), 'llcomm-lib-'))
  writeFileSync(join(dir, 'libbroken.so.1'), 'not an ELF file')
  const spec: LibrarySpec = {
    name: 'libbroken',
    envVar: 'LLCOMM_TEST_BROKEN',
    sonames: ['libbroken.so'],
    directories: () => [dir],
  }
  assert.throws(
    () => loadLibrary(spec),
    (e: unknown) => {
      assert.ok(isLlcommError(e, 'LIBRARY_NOT_FOUND'))
      const failures = e.details.failures as string[]
      assert.ok(
        failures.some((f) => f.startsWith(join(dir, 'libbroken.so.1'))),
        'the versioned file was found and tried',
      )
      return true
    },
  )
})
