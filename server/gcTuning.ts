// V8's allocation-site pretenuring allocates straight into the old generation the objects
// of a site whose objects it saw outlive young collections. On this service that is a
// request path's objects (a burst of slow requests is enough to flip a site), which then
// die there: full collections every few seconds under a steady read load, each a 10–35 ms
// stall of the main thread (the tail of bench (b½)). Measured: the same cached read, paced
// at 22k req/s for 10 s, promoted 0.16 MB per young collection and ran 4 full collections
// (one build: 0.4–0.56 MB and 10); without pretenuring 0.06–0.10 MB and 1–2
// (bench/README.md). Set when the service starts (V8 reads it at each young collection), for
// every way of starting it (npm start, the container, the bench's in-process service).
import { setFlagsFromString } from 'node:v8';

export const SERVICE_V8_FLAGS = ['--no-allocation-site-pretenuring'];

export function tuneGc(): void {
  for (const flag of SERVICE_V8_FLAGS) setFlagsFromString(flag);
}
