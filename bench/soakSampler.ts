// Loaded with --import into the service process by bench/soak.ts only: on the message
// 'sample' (IPC), runs a full GC (node --expose-gc) and answers with memoryUsage(); on
// 'rss' (bench/process.ts), answers it as it is, without a GC.
const gc = (globalThis as { gc?: () => void }).gc;
if (process.send) {
  process.on('message', (m) => {
    if (m !== 'sample' && m !== 'rss') return;
    if (m === 'sample') gc?.();
    const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
    process.send!({ rss, heapUsed, external, arrayBuffers });
  });
  // The IPC channel must not keep the process alive once the service closes.
  process.channel?.unref();
}
export {};
