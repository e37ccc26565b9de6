/**
 * The float64 reference and the "wrong element" rule of `benchmark()` and the GPU tests: one module for both
 * backends, src/dtype/tolerance.ts (numeric models per algorithm, error bounds). Re-exported here for the cuda
 * backend's callers.
 */
export {
  countWrong,
  decodeElement,
  elementRight,
  F32_ACCUMULATION,
  maxRelativeError,
  type NumericModel,
  numericModel,
  type Reference,
  ranksAgreeBitwise,
  referenceSum,
} from '../../dtype/tolerance.js'
