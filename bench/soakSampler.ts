// Loaded with --import into the service process by bench/soak.ts only: on the message
// 'sample' (IPC), runs a full GC (node --expose-gc) and answers with memoryUsage().
const gc = (globalThis as { gc?: () => void }).gc;
if (process.send) {
  process.on('message', (m) => {
    if (m !== 'sample') return;
    gc?.();
    const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
    process.send!({ rss, heapUsed, external, arrayBuffers });
  });
  // The IPC channel must not keep the process alive once the service closes.
  process.channel?.unref();
}
export {};
