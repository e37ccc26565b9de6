export type { CheckProtocolOptions, ProtocolCheckResult } from './check-protocol.js'
export { buildProtocolProgram, checkProtocol } from './check-protocol.js'
export type { DoorbellCheckResult, DoorbellMutation, DoorbellScenario } from './doorbell-model.js'
export { checkDoorbell, DOORBELL_MUTATIONS } from './doorbell-model.js'
export type { Counterexample, ExploreOptions, ExploreResult, ProgramInterpreter } from './interleaving-explorer.js'
export { createInterpreter, exploreInterleavings } from './interleaving-explorer.js'
export type {
  Instruction,
  PollCondition,
  ProtocolModelName,
  ProtocolMutation,
  ProtocolProgram,
  ViolationKind,
} from './protocol-model.js'
export { MUTATIONS_BY_MODEL, PROTOCOL_MODELS } from './protocol-model.js'
export type { CallAlgorithm } from './protocols/mixed-sentinel-program.js'
export { alternatingSequence } from './protocols/mixed-sentinel-program.js'
