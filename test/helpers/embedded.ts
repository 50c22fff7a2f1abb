// An embedded (PGlite) database folder made by initdb once and copied for every test
// that starts the embedded backend. PGlite runs initdb inside WebAssembly on the first
// open of an empty folder: about 8 CPU-seconds each time, where opening a copy costs
// under one. The copy holds what that first open leaves (a cluster, cleanly shut down,
// no schema): the service still applies every migration itself, as on a fresh install.
// The template is cached under os.tmpdir(), keyed by the PGlite version, and made
// atomically (built in a private folder, then renamed), so parallel test files share it.
// test/server/main.test.ts's fresh-clone test and test/storage/db.test.ts (which also
// checks that a copy migrates to the same schema as an empty folder) still start on
// empty folders.
import { randomBytes } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

function pgliteVersion(): string {
  // The package's exports do not include package.json: find it from its entry.
  let dir = dirname(require.resolve('@electric-sql/pglite'));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === '@electric-sql/pglite' && pkg.version) return pkg.version;
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('@electric-sql/pglite: package.json not found');
    dir = up;
  }
}

/** Where the template of this PGlite version lives (it may not exist yet). */
export function templatePath(): string {
  return join(tmpdir(), `vault-test-pglite-${pgliteVersion()}`);
}

let made: Promise<string> | undefined;

/** The template folder, made on first use (by this or any other process). */
export function pgliteTemplate(): Promise<string> {
  return (made ??= (async () => {
    const target = templatePath();
    if (existsSync(join(target, 'PG_VERSION'))) return target;
    const building = `${target}.building-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      const { PGlite } = await import('@electric-sql/pglite');
      const db = await PGlite.create(building);
      await db.query('select 1');
      await db.close();
      try {
        renameSync(building, target);
      } catch (err) {
        // Another process renamed its copy first: theirs is as good as ours.
        if (!['ENOTEMPTY', 'EEXIST'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
      }
    } finally {
      rmSync(building, { recursive: true, force: true });
    }
    return target;
  })());
}

/**
 * Fills `dataDir`/pglite (where storage/db.ts keeps the embedded database) with a copy
 * of the template, as the first open of an empty folder would. Returns `dataDir`.
 */
export async function seedEmbeddedDataDir(dataDir: string): Promise<string> {
  const template = await pgliteTemplate();
  const dbDir = join(dataDir, 'pglite');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  cpSync(template, dbDir, { recursive: true, errorOnExist: true, force: false });
  chmodSync(dbDir, 0o700); // as storage/db.ts makes it
  return dataDir;
}
