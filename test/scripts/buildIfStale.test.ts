// `npm start` rebuilds only when a source is newer than the recorded build.
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { ROOT } from '../chart/lib.js';

const SCRIPT = join(ROOT, 'scripts', 'build-if-stale.mjs');

t.test('stale when there is no build, or a source is newer than it; fresh otherwise', async (t) => {
  const { staleReason } = (await import(SCRIPT)) as { staleReason(dir: string): string | undefined };
  const dir = mkdtempSync(join(tmpdir(), 'vault-stale-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
  const file = (rel: string, s: number) => {
    const p = join(dir, rel);
    mkdirSync(join(p, '..'), { recursive: true });
    writeFileSync(p, 'x');
    utimesSync(p, at(s), at(s));
  };
  file('package.json', 1);
  file('server/http/app.ts', 2);
  file('ui/src/App.tsx', 2);
  t.equal(staleReason(dir), 'no recorded build');

  file('dist/.build-stamp', 10);
  t.equal(staleReason(dir), undefined, 'every source older than the build');

  file('ui/dist/assets/app.js', 20);
  file('server/node_modules/x.js', 20);
  t.equal(staleReason(dir), undefined, 'build output and dependencies do not count');
  file('test/server/x.test.ts', 20);
  t.equal(staleReason(dir), undefined, 'tests are not needed to start');

  file('storage/secrets.ts', 11);
  t.equal(staleReason(dir), 'storage/secrets.ts is newer than the build');
});

t.test('package.json: prestart runs the stale check, build the same script in --build mode', async (t) => {
  const { readFileSync } = await import('node:fs');
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  t.equal(pkg.scripts.prestart, 'node scripts/build-if-stale.mjs');
  t.equal(pkg.scripts.build, 'node scripts/build-if-stale.mjs --build');
  t.ok(fileURLToPath(new URL('file://' + SCRIPT)));
});

// The build records itself: `npm start` right after `npm run build` does not build again
// (the build used to empty dist, stamp included, so the next start always rebuilt). The
// real script runs in a copy of the tree whose vite and tsc are stand-ins writing output.
t.test('npm run build leaves a fresh stamp; the stale check then does not build again', async (t) => {
  const { copyFileSync, chmodSync, existsSync, readFileSync } = await import('node:fs');
  const { spawnSync } = await import('node:child_process');
  const dir = mkdtempSync(join(tmpdir(), 'vault-build-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'scripts'));
  copyFileSync(SCRIPT, join(dir, 'scripts', 'build-if-stale.mjs'));
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', scripts: { build: pkg.scripts.build } }));
  for (const f of ['server/main.ts', 'ui/src/App.tsx', 'storage/db.ts', 'crypto/worker.ts']) {
    mkdirSync(join(dir, f, '..'), { recursive: true });
    writeFileSync(join(dir, f), 'x');
  }
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  const tool = (name: string, body: string) => {
    writeFileSync(join(dir, 'node_modules', '.bin', name), `#!/bin/sh\necho "${name} $*" >> "$PWD/steps.log"\n${body}\n`);
    chmodSync(join(dir, 'node_modules', '.bin', name), 0o755);
  };
  tool('vite', 'mkdir -p ui/dist && echo app > ui/dist/app.js');
  tool('tsc', 'mkdir -p dist/server && echo main > dist/server/main.js');
  mkdirSync(join(dir, 'dist'));
  writeFileSync(join(dir, 'dist', 'leftover.js'), 'old');

  const run = (...args: string[]) => spawnSync(process.execPath, [join(dir, 'scripts', 'build-if-stale.mjs'), ...args], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  const npmBuild = spawnSync('npm', ['run', 'build', '--silent'], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: dir } });
  t.equal(npmBuild.status, 0, 'npm run build', { stderr: npmBuild.stderr });
  t.equal(readFileSync(join(dir, 'steps.log'), 'utf8'), 'vite build --config ui/vite.config.ts --logLevel warn\ntsc -p tsconfig.json\n', 'vite, then tsc');
  t.notOk(existsSync(join(dir, 'dist', 'leftover.js')), 'dist was emptied first');
  t.ok(existsSync(join(dir, 'dist', '.build-stamp')), 'the build recorded itself');

  const start = run();
  t.equal(start.status, 0);
  t.match(start.stderr, /build is up to date/, 'the pre-start check after a build does not build');
  t.equal(readFileSync(join(dir, 'steps.log'), 'utf8').split('\n').length, 3, 'no second build ran');

  // A source edited after the build: the next start builds (and records) again.
  const later = new Date(Date.now() + 60_000);
  utimesSync(join(dir, 'server', 'main.ts'), later, later);
  const stale = run();
  t.equal(stale.status, 0);
  t.match(stale.stderr, /building: server\/main\.ts is newer than the build/);
  t.equal(readFileSync(join(dir, 'steps.log'), 'utf8').split('\n').length, 5, 'one more build');

  // A failing step fails the build and records nothing.
  tool('tsc', 'exit 3');
  rmSync(join(dir, 'dist'), { recursive: true, force: true });
  const failed = run('--build');
  t.equal(failed.status, 3, "the failing step's status");
  t.notOk(existsSync(join(dir, 'dist', '.build-stamp')), 'no stamp for a failed build');
});
