// The embedded default is what people run at home, where resident memory is what they
// watch. V8 grows the main thread's young generation to 32 MB while the service loads,
// and an idle service never gives it back; with the growth factor at 1 it stays at its
// initial 4 MB (~25 MB less resident memory right after start; bench/README.md, RSS).
// A V8 flag read when the young generation next grows: server/main.ts runs this before
// it loads the service's modules (parsing them is what grew it). With DATABASE_URL (a
// server deployment) nothing changes.
// Load still grows it to 32 MB; only a cap set when V8 creates the heap stops that, so
// `npm start` passes --max-semi-space-size=2 on node's command line (package.json, README).
// This file is what a start without that flag (`node dist/server/main.js`) still gets.
import { setFlagsFromString } from 'node:v8';

export const EMBEDDED_V8_FLAGS = ['--semi-space-growth-factor=1'];

if (!process.env.DATABASE_URL?.trim()) {
  for (const flag of EMBEDDED_V8_FLAGS) setFlagsFromString(flag);
}
