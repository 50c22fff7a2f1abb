// restore (issue 31.11): a file that is not a backup, a truncated one, one whose content
// does not add up (found only once loaded): each refused in one line, exit 1, and
// DATA_DIR left as it was (absent stays absent, an empty folder stays empty). A backup
// of an earlier version (a gzipped copy of the folder) still restores.
import { mkdirSync, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import t from 'tap';
import { cliEnv, openServices, readAll, runCli, tempDir } from './helpers.js';
import { seedHomelab } from '../../helpers/service.js';

t.setTimeout(240_000);

t.test('restore: refusals leave nothing behind; an older physical backup restores', async (t) => {
  const env = await cliEnv(t, 'embedded');
  const services = await openServices(t, env);
  await seedHomelab(services);
  const before = await readAll(services);
  await services.close();
  const work = tempDir(t);
  const good = join(work, 'good.backup');
  const b = await runCli(['backup', '--out', good], env);
  t.equal(b.code, 0, b.stderr);
  const bytes = readFileSync(good);

  const content = gunzipSync(bytes);
  const nl = content.indexOf(10, content.indexOf(10) + 1);
  const manifest = JSON.parse(content.subarray(content.indexOf(10) + 1, nl).toString()) as { tables: Array<{ name: string; rows: number }> };
  manifest.tables.find((x) => x.name === 'secrets')!.rows += 1;
  const lying = Buffer.concat([content.subarray(0, content.indexOf(10) + 1), Buffer.from(JSON.stringify(manifest)), content.subarray(nl)]);

  const cases: Array<[string, Buffer, RegExp]> = [
    ['not gzip', Buffer.from('this is not a backup at all, just some text\n'), /not a vault-standalone backup \(not gzip data\)/],
    ['truncated', bytes.subarray(0, Math.floor(bytes.length / 2)), /cannot read the backup: it is cut short/],
    ['gzip of something else', gzipSync(Buffer.from('hello '.repeat(200))), /not a vault-standalone backup \(unknown content\)/],
    ['a manifest that does not match its rows', gzipSync(lying), /table secrets loaded \d+ rows, its manifest says \d+/],
  ];
  for (const [what, file, message] of cases) {
    const path = join(work, `${what.replaceAll(' ', '-')}.backup`);
    writeFileSync(path, file);
    for (const existing of [false, true]) {
      const dir = join(tempDir(t), 'data');
      if (existing) mkdirSync(dir);
      const r = await runCli(['restore', '--in', path], { DATA_DIR: dir });
      t.equal(r.code, 1, `${what}: exit 1`);
      t.match(r.stderr, message, `${what}: says why`);
      t.equal(r.stderr.trimEnd().split('\n').length, 1, `${what}: in one line`, { stderr: r.stderr });
      t.notMatch(r.stderr, /\n\s+at /, `${what}: no stack trace`);
      if (existing) t.same(readdirSync(dir), [], `${what}: the empty DATA_DIR stays empty`);
      else t.notOk(existsSync(dir), `${what}: the missing DATA_DIR is not created`);
    }
  }

  // An earlier version's backup: a gzipped tar of the folder (PGlite's dumpDataDir).
  const { PGlite } = await import('@electric-sql/pglite');
  const pg = await PGlite.create(join(env.DATA_DIR!, 'pglite'));
  const tar = Buffer.from(await (await pg.dumpDataDir('gzip')).arrayBuffer());
  await pg.close();
  const old = join(work, 'physical.backup');
  writeFileSync(old, tar);
  const restored = { ...env, DATA_DIR: join(tempDir(t), 'data') };
  const r = await runCli(['restore', '--in', old], restored);
  t.equal(r.code, 0, r.stderr);
  t.same(readdirSync(restored.DATA_DIR).sort(), ['pglite'], 'only the database folder is left (no work folder, no lock)');
  const back = await openServices(t, restored);
  t.same(await readAll(back), before, 'every secret of the physical backup reads back');
  await back.close();
});
