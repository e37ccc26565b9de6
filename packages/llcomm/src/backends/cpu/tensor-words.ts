/** Typed arrays of a dtype <-> the 32-bit words the LL buffers carry (16-bit dtypes: two lanes per word). */
import type { Dtype, TensorArray } from '../../api/types.js'
import { wordsForCount } from '../../dtype/codec.js'

/** Copies `input` into `words` (length wordsForCount); an odd 16-bit count gets a zero padding lane. */
export function writeWords(input: TensorArray, dtype: Dtype, words: Int32Array): void {
  if (dtype === 'f32') {
    new Float32Array(words.buffer, words.byteOffset, input.length).set(input as Float32Array)
    return
  }
  const lanes = new Uint16Array(words.buffer, words.byteOffset, wordsForCount(dtype, input.length) * 2)
  lanes.set(input as Uint16Array)
  if (input.length % 2 === 1) lanes[input.length] = 0
}

/** A fresh typed array of `count` elements read from `words`. */
export function readWords(words: Int32Array, dtype: Dtype, count: number): TensorArray {
  if (dtype === 'f32') return new Float32Array(words.buffer, words.byteOffset, count).slice()
  return new Uint16Array(words.buffer, words.byteOffset, count).slice()
}
