#!/usr/bin/env node
// The build, and `npm start`'s pre-step.
//   node scripts/build-if-stale.mjs --build   (`npm run build`): empties dist, builds the UI
//     (vite) and the TypeScript (tsc), then records the build (dist/.build-stamp, dated
//     when the build started).
//   node scripts/build-if-stale.mjs           (`npm start`'s prestart): the same build, but
//     only when a source the service is built from is newer than the recorded build, or
//     there is none. A fresh clone (`npm ci && npm start`) has no stamp: it builds; a start
//     right after `npm run build` does not build again.
// Plain JavaScript with node built-ins only: it runs before anything is compiled.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** What `npm start` runs is built from these (tests and benchmarks are not needed to start). */
const SOURCES = ['package.json', 'package-lock.json', 'tsconfig.json', 'crypto', 'server', 'storage', 'ui'];
/** Build output and dependencies inside the source folders. */
const SKIP = new Set(['node_modules', 'dist']);

/** The newest modification time under `path` (ms), with the file that has it. */
export function newest(path) {
  let best = { mtimeMs: 0, file: '' };
  const visit = (p) => {
    let st;
    try {
      st = statSync(p);
    } catch {
      return; // vanished while walking, or a dangling link
    }
    if (st.isDirectory()) {
      // Files only: a directory's own time also moves when the build creates ui/dist in it.
      // (A deleted source therefore does not trigger a build; nothing imports what it compiled to.)
      for (const name of readdirSync(p)) if (!SKIP.has(name)) visit(join(p, name));
    } else if (st.mtimeMs > best.mtimeMs) {
      best = { mtimeMs: st.mtimeMs, file: p };
    }
  };
  visit(path);
  return best;
}

export function staleReason(dir = root) {
  const stamp = join(dir, 'dist', '.build-stamp');
  if (!existsSync(stamp)) return 'no recorded build';
  const built = statSync(stamp).mtimeMs;
  for (const s of SOURCES) {
    const n = newest(join(dir, s));
    if (n.mtimeMs > built) return `${n.file.slice(dir.length + 1)} is newer than the build`;
  }
  return undefined;
}

/** The build's steps, each a program under node_modules/.bin with its arguments. */
const STEPS = [
  ['vite', 'build', '--config', 'ui/vite.config.ts', '--logLevel', 'warn'],
  ['tsc', '-p', 'tsconfig.json'],
];

/** Builds `dir` from scratch and records it; returns the exit status of the step that failed, or 0. */
export function build(dir = root) {
  // The time the build started: a source edited during the build is newer, so the next start builds again.
  const started = new Date();
  rmSync(join(dir, 'dist'), { recursive: true, force: true });
  for (const [bin, ...args] of STEPS) {
    const r = spawnSync(join(dir, 'node_modules', '.bin', bin), args, { cwd: dir, stdio: 'inherit' });
    if (r.status !== 0) return r.status ?? 1;
  }
  const stamp = join(dir, 'dist', '.build-stamp');
  writeFileSync(stamp, `${started.toISOString()}\n`);
  utimesSync(stamp, started, started);
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const always = process.argv.includes('--build');
  const reason = always ? 'npm run build' : staleReason();
  if (reason === undefined) {
    console.error('build is up to date (dist/.build-stamp); not rebuilding');
  } else {
    if (!always) console.error(`building: ${reason}`);
    const status = build();
    if (status !== 0) process.exit(status);
  }
}
