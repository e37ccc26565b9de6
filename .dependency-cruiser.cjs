/**
 * The import rules of llcomm's two packages (checked in CI by `npm run deps`, part of `npm run lint`).
 *
 * The library (packages/llcomm/src) is layered; a file may import its own layer or the layers below, never above:
 *   entry        index.ts (public API), internal.ts (for llcomm's own tools), create.ts (the factory)
 *   backends     backends/cpu, backends/cuda (cpu and cuda never import each other)
 *   communicator communicator/ (what both backends share: options, validation, lifecycle) and rendezvous/ (how
 *                the processes of a one-process-per-rank group meet and watch each other)
 *   algorithms   algorithms/ (the cpu algorithms, the registry, `auto`)
 *   protocol     protocol/ (the LL buffer on SharedArrayBuffer)
 *   foundation   api/ (public types), errors.ts, dtype/
 * and ffi/ (the only koffi user) is imported by backends/cuda, the cpu backend's one-process-per-rank files
 * (backends/cpu/process-*: libc's shm_open, mmap, futex) and the entry files alone: the in-process cpu backend
 * never loads koffi.
 * The tools (packages/tools/src) use the library only through 'llcomm' and 'llcomm/internal'; cli/ is their top.
 */
const LIB = '^packages/llcomm/src/'
const layer = (name) => `${LIB}${name}`
const FOUNDATION = `${LIB}(api/|errors\\.ts$|dtype/)`
const below = {
  foundation: [],
  protocol: [FOUNDATION],
  algorithms: [FOUNDATION, layer('protocol/')],
  communicator: [FOUNDATION, layer('protocol/'), layer('algorithms/')],
  rendezvous: [FOUNDATION],
}

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'no import cycle anywhere', from: {}, to: { circular: true } },
    {
      name: 'library-never-imports-tools',
      severity: 'error',
      from: { path: '^packages/llcomm/' },
      to: { path: '^packages/tools/' },
    },
    {
      name: 'tools-use-the-library-by-name',
      severity: 'error',
      comment:
        "tools reach the library through 'llcomm' or 'llcomm/internal' (its dist entry points), never its sources",
      from: { path: '^packages/tools/' },
      to: { path: '^packages/llcomm/', pathNot: '^packages/llcomm/dist/src/(index|internal)\\.(js|d\\.ts)$' },
    },
    {
      name: 'examples-use-the-public-api',
      severity: 'error',
      from: { path: '^examples/' },
      to: { path: '^packages/', pathNot: '^packages/llcomm/dist/src/index\\.(js|d\\.ts)$' },
    },
    {
      name: 'foundation-imports-nothing-above',
      severity: 'error',
      from: { path: FOUNDATION },
      to: { path: LIB, pathNot: [FOUNDATION, layer('ffi/types\\.ts$')] },
    },
    ...['protocol', 'algorithms', 'communicator', 'rendezvous'].map((name) => ({
      name: `${name}-imports-only-below`,
      severity: 'error',
      from: { path: layer(`${name}/`) },
      to: { path: LIB, pathNot: [layer(`${name}/`), ...below[name], layer('ffi/types\\.ts$')] },
    })),
    {
      name: 'backends-import-no-entry',
      severity: 'error',
      from: { path: layer('backends/') },
      to: { path: `${LIB}(index|internal|create)\\.ts$` },
    },
    {
      name: 'cpu-and-cuda-backends-apart',
      severity: 'error',
      from: { path: layer('backends/(cpu|cuda)/') },
      to: { path: layer('backends/'), pathNot: [layer('backends/$1/')] },
    },
    {
      name: 'ffi-only-from-cuda-and-entry',
      severity: 'error',
      from: {
        path: LIB,
        pathNot: [
          layer('ffi/'),
          layer('backends/cuda/'),
          layer('backends/cpu/process-'),
          `${LIB}(index|internal)\\.ts$`,
        ],
      },
      to: { path: layer('ffi/'), pathNot: layer('ffi/types\\.ts$') },
    },
    {
      name: 'in-process-cpu-backend-never-loads-koffi',
      severity: 'error',
      comment: 'the worker-thread backend runs where no native library may load; only the per-process files map memory',
      from: { path: layer('backends/cpu/'), pathNot: layer('backends/cpu/process-') },
      to: { path: [layer('backends/cpu/process-'), layer('ffi/')] },
    },
    {
      name: 'only-ffi-loads-koffi',
      severity: 'error',
      from: { pathNot: `${LIB}ffi/` },
      to: { path: 'node_modules/koffi' },
    },
    {
      name: 'tools-cli-is-the-top',
      severity: 'error',
      from: { path: '^packages/tools/src/', pathNot: '^packages/tools/src/cli/' },
      to: { path: '^packages/tools/src/cli/' },
    },
  ],
  options: {
    doNotFollow: { path: ['node_modules', '^packages/llcomm/dist/'] },
    exclude: { path: ['/dist/(?!src/(index|internal)\\.)'] },
    tsConfig: { fileName: 'tsconfig.base.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'types', 'default'] },
  },
}
