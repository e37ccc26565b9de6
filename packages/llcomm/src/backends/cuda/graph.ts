/**
 * CUDA-graph capture over one or several streams (one per device): capture starts on the first stream, the
 * others join through an event (fork) and are joined back before the capture ends (join), so one graph holds
 * every device's work and one cuGraphLaunch on the first stream replays it all.
 */
import type { CudaDriver, CuEvent, CuGraph, CuGraphExec, CuStream } from '../../ffi/index.js'
import { CU_EVENT_DISABLE_TIMING } from '../../ffi/index.js'

export class CapturedGraph {
  private readonly driver: CudaDriver
  private graph: CuGraph | undefined
  private exec: CuGraphExec | undefined
  readonly stream: CuStream

  private constructor(driver: CudaDriver, stream: CuStream, graph: CuGraph, exec: CuGraphExec) {
    this.driver = driver
    this.stream = stream
    this.graph = graph
    this.exec = exec
  }

  /**
   * Captures `body` (which enqueues work on `streams`); `setCurrent(i)` makes stream i's context current (the
   * caller knows the device of each stream). Capture is ended even if `body` throws.
   */
  static capture(
    driver: CudaDriver,
    streams: readonly CuStream[],
    setCurrent: (i: number) => void,
    body: () => void,
  ): CapturedGraph {
    const events: CuEvent[] = []
    const s0 = streams[0]
    setCurrent(0)
    const fork = driver.eventCreate(CU_EVENT_DISABLE_TIMING)
    events.push(fork)
    const joins: CuEvent[] = []
    for (let i = 1; i < streams.length; i++) {
      setCurrent(i)
      const j = driver.eventCreate(CU_EVENT_DISABLE_TIMING)
      joins.push(j)
      events.push(j)
    }
    let graph: CuGraph | undefined
    try {
      setCurrent(0)
      driver.beginCapture(s0)
      let failure: unknown
      try {
        if (streams.length > 1) {
          driver.eventRecord(fork, s0)
          for (let i = 1; i < streams.length; i++) {
            setCurrent(i)
            driver.streamWaitEvent(streams[i], fork)
          }
        }
        body()
        for (let i = 1; i < streams.length; i++) {
          setCurrent(i)
          driver.eventRecord(joins[i - 1], streams[i])
          setCurrent(0)
          driver.streamWaitEvent(s0, joins[i - 1])
        }
      } catch (e) {
        failure = e
      }
      setCurrent(0)
      graph = driver.endCapture(s0)
      if (failure) throw failure
      const exec = driver.graphInstantiate(graph)
      return new CapturedGraph(driver, s0, graph, exec)
    } catch (e) {
      if (graph !== undefined) driver.graphDestroy(graph)
      throw e
    } finally {
      for (const e of events) driver.eventDestroy(e)
    }
  }

  replay(stream: CuStream = this.stream): void {
    if (this.exec === undefined) throw new Error('graph destroyed')
    this.driver.graphLaunch(this.exec, stream)
  }

  destroy(): void {
    if (this.exec !== undefined) this.driver.graphExecDestroy(this.exec)
    if (this.graph !== undefined) this.driver.graphDestroy(this.graph)
    this.exec = undefined
    this.graph = undefined
  }
}

/** Waits for every stream (stream i on the device `setCurrent(i)` selects); errors are swallowed: used before freeing. */
export function drainStreams(driver: CudaDriver, streams: readonly CuStream[], setCurrent: (i: number) => void): void {
  try {
    for (const [i, s] of streams.entries()) {
      setCurrent(i)
      driver.streamSynchronize(s)
    }
  } catch {
    // what follows (freeing) still runs
  }
}
