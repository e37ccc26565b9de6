/**
 * Branded handle types of the FFI boundary. Every handle is the native pointer value as a JS number (user-space
 * and device virtual addresses on x86-64 Linux stay below 2^47, far inside Number's exact range; the loaders
 * check this and throw rather than round). The brands stop a stream being passed where a device pointer is
 * expected; nothing outside src/ffi/ can make one except through these functions' results (or `asDevicePtr`
 * for pointers that come from another library, e.g. a framework's tensor).
 */
import { LlcommError } from '../errors.js'

declare const brand: unique symbol
type Branded<T, B extends string> = T & { readonly [brand]: B }

/** A CUdeviceptr: an address in the unified virtual address space, valid on every device with peer access. */
export type DevicePtr = Branded<number, 'DevicePtr'>
export type CuDevice = Branded<number, 'CuDevice'>
export type CuContext = Branded<number, 'CuContext'>
/** 0 is the legacy default stream; captures need a real stream. */
export type CuStream = Branded<number, 'CuStream'>
export type CuModule = Branded<number, 'CuModule'>
export type CuFunction = Branded<number, 'CuFunction'>
export type CuEvent = Branded<number, 'CuEvent'>
export type CuGraph = Branded<number, 'CuGraph'>
export type CuGraphExec = Branded<number, 'CuGraphExec'>
export type NcclComm = Branded<number, 'NcclComm'>
export type NcclWindow = Branded<number, 'NcclWindow'>

/** Wraps a raw device address obtained elsewhere (another library's allocation). */
export function asDevicePtr(address: number | bigint): DevicePtr {
  return toSafeNumber(address, 'device pointer') as DevicePtr
}

/** Wraps a raw CUstream obtained elsewhere (e.g. a framework's current stream). */
export function asStream(handle: number | bigint): CuStream {
  return toSafeNumber(handle, 'stream') as CuStream
}

/** Adds a byte offset to a device pointer (sub-buffers, rotating inputs). */
export function offsetDevicePtr(ptr: DevicePtr, bytes: number): DevicePtr {
  return (ptr + bytes) as DevicePtr
}

/** `devicePtr(address)`: the public name of asDevicePtr (a pointer another library handed out). */
export const devicePtr = asDevicePtr
/** `cudaStream(handle)`: the public name of asStream (a stream another library handed out). */
export const cudaStream = asStream

export function toSafeNumber(v: number | bigint, what: string): number {
  const n = typeof v === 'bigint' ? Number(v) : v
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new LlcommError('INVALID_ARGUMENT', `${what} ${String(v)} is not a non-negative safe integer`, { what })
  }
  return n
}
