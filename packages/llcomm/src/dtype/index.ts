/** Dtype conversions and sentinel patterns, shared by the cpu and cuda backends. */

export * from './codec.js'
export * from './f32.js'
export * from './half.js'
export * from './sentinels.js'
export * from './tolerance.js'
