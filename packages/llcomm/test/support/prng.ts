/** A seeded PRNG for tests: the same generator the workers use, so a failing seed reproduces anywhere. */
export { mixSeed, SeededRandom } from '../../src/backends/cpu/benchmark-data.js'
