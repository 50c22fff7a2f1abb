// The watchdog's thread (server/watchdog.ts): reads the main thread's stamp; when it is
// older than the limit, one line to stderr (straight to fd 2: the main thread, which
// relays a worker's stderr, no longer runs) and SIGKILL for the whole process.
import { writeSync } from 'node:fs';
import { workerData } from 'node:worker_threads';

const { shared, limitMs } = workerData as { shared: SharedArrayBuffer; limitMs: number };
const beat = new BigInt64Array(shared);

setInterval(
  () => {
    const blocked = Date.now() - Number(Atomics.load(beat, 0));
    if (blocked <= limitMs) return;
    try {
      const msg = `the event loop has not turned for ${Math.round(blocked / 1000)} s (WATCHDOG_SECONDS=${limitMs / 1000}): killing the process so it restarts`;
      writeSync(2, `${JSON.stringify({ level: 'fatal', time: new Date().toISOString(), pid: process.pid, event: 'watchdog', blockedMs: blocked, msg })}\n`);
    } finally {
      process.kill(process.pid, 'SIGKILL');
    }
  },
  Math.min(1000, Math.max(50, limitMs / 4)),
);
