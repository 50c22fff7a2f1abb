#!/usr/bin/env node
// `npm start`'s pre-step: runs `npm run build` only when a source the service is built
// from is newer than the last build this script recorded (dist/.build-stamp), or when
// there is no such build. A fresh clone (`npm ci && npm start`) has no stamp: it builds.
// Plain JavaScript with node built-ins only: it runs before anything is compiled.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = join(root, 'dist', '.build-stamp');
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

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const reason = staleReason();
  if (reason === undefined) {
    console.error('build is up to date (dist/.build-stamp); not rebuilding');
  } else {
    console.error(`building: ${reason}`);
    // The time the build started: a source edited during the build is newer, so the next start builds again.
    const started = new Date();
    const r = spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) process.exit(r.status ?? 1);
    writeFileSync(STAMP, `${started.toISOString()}\n`);
    utimesSync(STAMP, started, started);
  }
}
