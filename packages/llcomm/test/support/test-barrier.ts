/**
 * A barrier among the test's own worker threads (not llcomm's): every call adds one arrival to a shared counter and
 * waits until all `ranks` workers have arrived as often. For tests that must line ranks up between steps.
 */
export function makeTestBarrier(barrier: SharedArrayBuffer, ranks: number, timeoutMs: number): () => void {
  const counter = new Int32Array(barrier)
  let arrivals = 0
  return () => {
    arrivals++
    // SC add then notify: a waiter that reads the old count sleeps on it and is woken by the notify.
    Atomics.add(counter, 0, 1)
    Atomics.notify(counter, 0)
    const target = arrivals * ranks
    const deadline = Date.now() + timeoutMs
    for (let seen = Atomics.load(counter, 0); seen < target; seen = Atomics.load(counter, 0)) {
      if (Date.now() > deadline) throw new Error('test barrier timed out')
      Atomics.wait(counter, 0, seen, 100)
    }
  }
}
