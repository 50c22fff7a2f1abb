// Entry point (`npm start`, the container's CMD). The memory settings of the embedded
// default are applied before the service's modules are even loaded (loading them grows
// the heap V8 then keeps): see embeddedMemory.ts. Then the service: serve.ts.
import './embeddedMemory.js';

await import('./serve.js');
