/**
 * The communicator's device error word (kernels/llcomm/abi.cuh, LlcommErrorWord): eight u32 words, zero-filled at
 * creation; the first rank whose wait passes its deadline wins an atomicCAS on `code` and fills the rest. The host
 * reads it after the launch has finished (stream synchronized), so the plain copy sees the kernel's writes: kernel
 * completion orders all of the kernel's memory operations before the copy that follows it.
 */

import { LlcommError, mismatchError } from '../../errors.js'
import type { CudaDriver, DevicePtr } from '../../ffi/index.js'
import { decodeSignature, describeSignature } from '../../protocol/call-signature.js'
import {
  decodeErrorWordBytes,
  LLCOMM_ERR_TIMEOUT as ERR_TIMEOUT,
  type ErrorWordFields,
  LLCOMM_ERR_MISMATCH,
  LLCOMM_ERROR_WORD_BYTES,
  LLCOMM_WAIT_KINDS as WAIT_NAMES,
} from './abi.js'

const ERROR_WORD_BYTES = LLCOMM_ERROR_WORD_BYTES
const NO_PEER = 0xffffffff

export type DecodedErrorWord = ErrorWordFields

/** The one decoder of the error word: the field offsets of abi.ts's ERROR_WORD_LAYOUT (checked against abi.cuh). */
export function decodeErrorWord(words: Uint32Array): DecodedErrorWord {
  return decodeErrorWordBytes(new Uint8Array(words.buffer, words.byteOffset, words.byteLength))
}

/** The LlcommError for a non-zero error word, or undefined when the word is clear. */
export function errorFromWord(words: Uint32Array): LlcommError | undefined {
  const w = decodeErrorWord(words)
  if (w.code === 0) return undefined
  const describe = DEVICE_ERRORS[w.code]
  if (describe) return describe(w, words)
  return new LlcommError('CUDA_ERROR', `device error word holds unknown code ${w.code}`, { ...w })
}

/**
 * The host error for each device error code (abi.cuh LLCOMM_ERR_*), in one table: a new device code (e.g. the
 * call-signature MISMATCH) is one more entry here, and the communicator's poisoning and recover() apply to it as is.
 */
const DEVICE_ERRORS: Readonly<Record<number, (w: DecodedErrorWord, words: Uint32Array) => LlcommError>> = {
  [ERR_TIMEOUT]: timeoutFromWord,
  [LLCOMM_ERR_MISMATCH]: (_w, words) => mismatchFromWord(words),
}

function timeoutFromWord(w: DecodedErrorWord): LlcommError {
  const what = WAIT_NAMES[w.what] ?? `wait kind ${w.what}`
  return LlcommError.timeout({
    rank: w.rank,
    peer: w.peer === NO_PEER ? -1 : w.peer,
    epoch: w.epoch,
    waitingFor: `${what} ${w.slot} on channel ${w.channel}`,
  })
}

/** Copies the error word's eight u32 to the host (synchronous); clears nothing. */
export function copyErrorWord(driver: CudaDriver, errorWord: DevicePtr): Uint32Array {
  const words = new Uint32Array(ERROR_WORD_BYTES / 4)
  driver.copyDtoH(words, errorWord)
  return words
}

/** Copies the error word to the host (synchronous) and decodes it; clears nothing. */
export function readErrorWord(driver: CudaDriver, errorWord: DevicePtr): LlcommError | undefined {
  return errorFromWord(copyErrorWord(driver, errorWord))
}

/**
 * MISMATCH (kernels/llcomm/signature.cuh; kernels/llcomm/wait.cuh, LlcWaiter::recordMismatch): the error word's what/slot hold the two ranks' signature
 * words 1 and channel/reserved their words 0 (abi.cuh LLCOMM_ERR_MISMATCH), decoded as the CPU backend's MISMATCH.
 */
export function mismatchFromWord(words: Uint32Array): LlcommError {
  const mine: [number, number] = [words[6] >>> 0, words[4] >>> 0]
  const theirs: [number, number] = [words[7] >>> 0, words[5] >>> 0]
  return mismatchError({
    rank: words[1],
    peer: words[2],
    epoch: words[3],
    mine: describeSignature(decodeSignature(mine[0], mine[1])),
    theirs: describeSignature(decodeSignature(theirs[0], theirs[1])),
    mineWords: mine,
    theirsWords: theirs,
  })
}
