// A watchdog on the main thread's event loop, run from a thread of its own. The embedded
// database runs PostgreSQL as WebAssembly on the main thread: a PANIC inside it (seen when
// the WAL could not get a new segment on a full disk, issue 31) left that thread spinning
// in WebAssembly for good, with no system call: no answer, no deadline 503, and SIGTERM
// ignored (a signal is handled by the loop that no longer turns). Nothing on the main
// thread can notice that, so a worker does: the main thread stamps a shared clock every
// second; when the stamp is older than the limit, the worker writes one line to stderr and
// kills the process (SIGKILL: nothing else can run on a thread that spins), so the
// orchestrator restarts it and PostgreSQL's recovery replays the WAL. The disk guard keeps
// the embedded database away from that PANIC; this is for whatever else blocks the loop.
import { Worker } from 'node:worker_threads';

export interface Watchdog {
  stop(): Promise<void>;
}

/** Starts the watchdog; limitMs 0 starts nothing. */
export function startWatchdog(limitMs: number): Watchdog {
  if (limitMs <= 0) return { stop: async () => {} };
  const shared = new SharedArrayBuffer(8);
  const beat = new BigInt64Array(shared);
  const stamp = () => Atomics.store(beat, 0, BigInt(Date.now()));
  stamp();
  const timer = setInterval(stamp, Math.min(1000, Math.max(25, limitMs / 8)));
  timer.unref();
  const worker = new Worker(new URL('./watchdogThread.js', import.meta.url), { workerData: { shared, limitMs }, env: {}, execArgv: [] });
  worker.unref();
  return {
    async stop() {
      clearInterval(timer);
      await worker.terminate();
    },
  };
}
