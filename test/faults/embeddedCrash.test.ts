// The embedded database across a crash of the service: SIGKILL while writes are in
// flight; the folder opens again (PostgreSQL's recovery from its WAL), its audit chain
// verifies, and every write answered 200 before the kill is there (a write in flight
// may or may not be). What this does not cover, and cannot here: a crash of the
// machine (docs/operations.md, "The embedded database and the disk").
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { signupAdmin } from '../helpers/admin.js';
import { seedEmbeddedDataDir } from '../helpers/embedded.js';
import { request } from '../helpers/http.js';
import { runMain } from '../helpers/process.js';
import { testKeys } from '../helpers/service.js';
import { runCli } from '../server/cli/helpers.js';

t.setTimeout(180_000);

const KEYS = 6;
const ACKED_BEFORE_KILL = 150;

t.test('SIGKILL under writes: every acknowledged write survives, the chain verifies', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-crash-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  await seedEmbeddedDataDir(dataDir);
  const env = { NODE_ENV: 'test', ...testKeys(), DATA_DIR: dataDir, DB_WAIT_SECONDS: '10' };

  const first = runMain(env);
  t.teardown(() => first.stop('SIGKILL'));
  const url = await first.listening;
  const admin = await signupAdmin(url);
  t.equal((await request(`${url}/api/v1/projects`, { method: 'POST', token: admin.token, json: { projectName: 'homelab' } })).status, 200);
  const scope = { projectSlug: 'homelab', environment: 'prod', secretPath: '/' };
  for (let k = 0; k < KEYS; k++) {
    t.equal((await request(`${url}/api/v3/secrets/raw/KEY_${k}`, { method: 'POST', token: admin.token, json: { ...scope, secretValue: 'initial' } })).status, 200);
  }

  // One client per key, each write sent once the one before was answered: per key, every
  // value sent and the last one answered 200.
  const sent = Array.from({ length: KEYS }, () => new Set<string>(['initial']));
  const acked: string[] = Array.from({ length: KEYS }, () => 'initial');
  let ackedCount = 0;
  const refused: number[] = [];
  let killed = false;
  const client = async (k: number) => {
    for (let n = 0; !killed; n++) {
      const value = `c${k}-${n}`;
      sent[k]!.add(value);
      try {
        const r = await fetch(`${url}/api/v3/secrets/raw/KEY_${k}`, {
          method: 'PATCH',
          headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ ...scope, secretValue: value }),
        });
        await r.arrayBuffer();
        if (killed) return;
        if (r.status !== 200) {
          refused.push(r.status);
          continue;
        }
        acked[k] = value;
        if (++ackedCount === ACKED_BEFORE_KILL) {
          killed = true;
          // At once, with the other clients' writes in flight.
          first.kill('SIGKILL');
        }
      } catch {
        return; // the connection died with the process
      }
    }
  };
  await Promise.all(Array.from({ length: KEYS }, (_, k) => client(k)));
  const { code, stdout } = await first.exit;
  t.equal(code, null, 'killed');
  t.notMatch(stdout, /"event":"shutdown"/, 'no graceful shutdown ran');
  t.same(refused, [], 'no write before the kill was refused');
  t.ok(ackedCount >= ACKED_BEFORE_KILL, `${ackedCount} writes acknowledged before the kill`);

  const verify = await runCli(['audit-verify'], env);
  t.equal(verify.code, 0, `the folder opens and its audit chain verifies: ${verify.stdout.trim()} ${verify.stderr.trim()}`);
  t.match(verify.stdout, /^audit chain ok: \d+ entries$/m);

  const second = runMain(env);
  t.teardown(() => second.stop('SIGKILL'));
  const again = await second.listening;
  const listed = await request(`${again}/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=/`, { token: admin.token });
  t.equal(listed.status, 200);
  const values = new Map((listed.body.secrets as Array<{ secretKey: string; secretValue: string }>).map((s) => [s.secretKey, s.secretValue]));
  for (let k = 0; k < KEYS; k++) {
    const value = values.get(`KEY_${k}`);
    const last = acked[k]!;
    const lastN = last === 'initial' ? -1 : Number(last.split('-')[1]);
    const n = value === 'initial' || value === undefined ? -1 : Number(value.split('-')[1]);
    t.ok(value !== undefined && sent[k]!.has(value) && n >= lastN, `KEY_${k}: ${value} is the last acknowledged (${last}) or one sent after it`);
  }
  const { code: stopped } = await second.stop();
  t.equal(stopped, 0);
});
