export * from './api/types.js'
export { LlcommError, isLlcommError } from './errors.js'
export type { LlcommErrorCode, TimeoutDetails } from './errors.js'
export { createCommunicator } from './communicator/create.js'
