// The service as a process: SIGTERM under load finishes every request it had accepted
// and exits 0; a second instance on a busy port exits non-zero with one line naming it.
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { signupAdmin } from '../helpers/admin.js';
import { freshDatabase } from '../helpers/db.js';
import { request } from '../helpers/http.js';
import { runToExit, serviceKeys, spawnService } from './helpers.js';

t.setTimeout(180_000);

async function environment(t: { teardown(fn: () => unknown): void }) {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-faults-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  return { ...serviceKeys(), DATABASE_URL: await freshDatabase(t), DATA_DIR: dataDir };
}

t.test('SIGTERM under load: readiness fails, every accepted request finishes, exit 0', async (t) => {
  const env = { ...(await environment(t)), SHUTDOWN_GRACE_SECONDS: '20' };
  const svc = await spawnService(t, env);
  const admin = await signupAdmin(svc.url);
  t.equal((await request(`${svc.url}/api/v1/projects`, { method: 'POST', token: admin.token, json: { projectName: 'homelab' } })).status, 200);
  const scope = { projectSlug: 'homelab', environment: 'prod', secretPath: '/' };
  for (let i = 0; i < 4; i++) {
    t.equal((await request(`${svc.url}/api/v3/secrets/raw/KEY_${i}`, { method: 'POST', token: admin.token, json: { ...scope, secretValue: 'v' } })).status, 200);
  }

  let signalAt = Infinity;
  const outcomes: Array<{ startedAt: number; status: number | string }> = [];
  let stop = false;
  t.teardown(() => void (stop = true));
  const client = async (i: number) => {
    for (let n = 0; !stop; n++) {
      const startedAt = performance.now();
      const write = n % 3 === 0;
      try {
        const r = write
          ? await fetch(`${svc.url}/api/v3/secrets/raw/KEY_${i % 4}`, {
              method: 'PATCH',
              headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
              body: JSON.stringify({ ...scope, secretValue: `c${i}-${n}` }),
            })
          : await fetch(`${svc.url}/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod&secretPath=/`, {
              headers: { authorization: `Bearer ${admin.token}` },
            });
        await r.arrayBuffer();
        outcomes.push({ startedAt, status: r.status });
      } catch (err) {
        const code = ((err as Error).cause as { code?: string } | undefined)?.code ?? (err as Error).name;
        outcomes.push({ startedAt, status: code });
        // Refused after the signal: this client is done.
        if (startedAt > signalAt) return;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  const clients = Array.from({ length: 16 }, (_, i) => client(i));
  // Load for a while, then the signal, with requests in flight.
  while (outcomes.length < 200) await new Promise((r) => setTimeout(r, 20));
  const readyBefore = await request(`${svc.url}/api/health/ready`);
  t.equal(readyBefore.status, 200, 'ready under load');
  signalAt = performance.now();
  svc.child.kill('SIGTERM');
  const exit = await svc.exit;
  const exitedAfterMs = performance.now() - signalAt;
  stop = true;
  await Promise.all(clients);

  t.equal(exit.code, 0, 'exit code 0');
  t.match(svc.stdout(), /SIGTERM received/);
  t.match(svc.stdout(), /shutdown complete/);
  t.notMatch(svc.stderr(), /ERROR|request failed|cut off/, 'no request failed or was cut off');
  const accepted = outcomes.filter((o) => o.startedAt < signalAt);
  const failed = accepted.filter((o) => o.status !== 200);
  t.ok(accepted.length >= 200, `${accepted.length} requests sent before the signal`);
  t.same(failed, [], '0 failed among the requests sent before the signal');
  const after = outcomes.filter((o) => o.startedAt >= signalAt);
  t.ok(
    after.every((o) => o.status === 200 || o.status === 'ECONNREFUSED'),
    `after it: served, or refused (never an error answer): ${[...new Set(after.map((o) => o.status))].join(', ')}`,
  );
  console.log(
    `# faults/process: ${accepted.length} requests before SIGTERM, ${failed.length} failed; after it ${after.filter((o) => o.status === 200).length} served and ${after.filter((o) => o.status !== 200).length} refused; exit 0 after ${exitedAfterMs.toFixed(0)} ms`,
  );
});

t.test('SIGTERM: not ready at once, while in-flight requests finish', async (t) => {
  const env = { ...(await environment(t)), SHUTDOWN_GRACE_SECONDS: '20' };
  const svc = await spawnService(t, env);
  const admin = await signupAdmin(svc.url);
  // A keep-alive connection opened before the signal can still ask for readiness.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const get = (path: string) =>
    new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
      httpGet(`${svc.url}${path}`, { agent }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      }).on('error', reject);
    });
  t.equal((await get('/api/health/ready')).status, 200);
  // A slow request in flight (argon2 password check, on its own connection).
  const slow = request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: { email: 'admin@example.test', password: 'a long admin passphrase' } });
  // Once the process says it took the signal (no race between the signal's delivery and the probe).
  const received = new Promise<void>((resolve) => {
    const check = () => /SIGTERM received/.test(svc.stdout()) && (svc.child.stdout!.off('data', check), resolve());
    svc.child.stdout!.on('data', check);
    check();
  });
  svc.child.kill('SIGTERM');
  await received;
  const ready = await get('/api/health/ready');
  t.equal(ready.status, 503, 'not ready once the signal is received');
  const body = JSON.parse(ready.body) as { checks: Record<string, string> };
  t.equal(body.checks.shutdown, 'shutting down');
  t.equal(ready.headers.connection, 'close', 'and the connection is closed after the answer');
  t.equal((await slow).status, 200, 'the request in flight finished');
  t.equal((await svc.exit).code, 0);
  void admin;
});

t.test('a second instance on the same port exits non-zero with one line naming the port', async (t) => {
  const env = await environment(t);
  const first = await spawnService(t, env);
  const second = await runToExit({ ...env, PORT: String(first.port) });
  t.not(second.code, 0, 'exit non-zero');
  const lines = second.stderr.trim().split('\n');
  t.equal(lines.length, 1, `one line: ${second.stderr.trim()}`);
  t.match(lines[0], new RegExp(`:${first.port}\\b`), 'naming the port');
  t.match(lines[0], /in use/);
  t.equal((await fetch(`${first.url}/api/health/live`)).status, 200, 'the first instance keeps serving');
});
