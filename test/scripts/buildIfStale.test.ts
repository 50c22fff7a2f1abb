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

t.test('package.json prestart runs the script, not a full build', async (t) => {
  const { readFileSync } = await import('node:fs');
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  t.equal(pkg.scripts.prestart, 'node scripts/build-if-stale.mjs');
  t.ok(fileURLToPath(new URL('file://' + SCRIPT)));
});
