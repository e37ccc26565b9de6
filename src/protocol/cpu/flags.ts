/**
 * Epoch barrier on the shared memory (for the `oneshot-barrier` baseline): each rank counts its own arrivals in
 * its control block and waits until every peer's count has caught up. Counts only grow, so there is no sense to
 * reverse and no reset between barriers.
 */

import { CONTROL, controlIndex } from './layout.js'
import type { RankControl } from './wait.js'

export class EpochBarrier {
  private readonly control: RankControl
  private readonly peers: number[]

  constructor(control: RankControl) {
    this.control = control
    this.peers = []
    for (let p = 0; p < control.size; p++) if (p !== control.rank) this.peers.push(p)
  }

  /**
   * Arrive, then wait for all. Our Atomics.add is SC and follows our writes before the barrier in program order;
   * a peer's SC load that sees our count therefore also sees those writes (and symmetrically for theirs).
   */
  arriveAndWait(): void {
    const c = this.control
    const i32 = c.i32
    const arrived = Atomics.add(i32, controlIndex(c.rank, CONTROL.BARRIER_ARRIVALS), 1) + 1
    for (const p of this.peers) c.markWritten(p)
    c.ringDoorbells()
    // The latest peer first, as the barrier-free receives do (RankControl.waitForAll): the same waiting machinery
    // on both sides of the comparison.
    this.target = arrived
    c.waitForAll(this.peers, -1, this.hasArrived, this.waitForPeer)
  }

  /** arriveAndWait's target count and callbacks, made once (a barrier runs on every call: no closure per call). */
  private target = 0
  private readonly hasArrived = (p: number): boolean =>
    Atomics.load(this.control.i32, controlIndex(p, CONTROL.BARRIER_ARRIVALS)) - this.target >= 0
  private readonly waitForPeer = (p: number): void => {
    this.control.waitUntil(
      () => this.hasArrived(p),
      p,
      () => `barrier ${this.target}`,
    )
  }

  reset(): void {
    Atomics.store(this.control.i32, controlIndex(this.control.rank, CONTROL.BARRIER_ARRIVALS), 0)
  }
}
