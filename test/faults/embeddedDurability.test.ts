// The embedded database's durability, observed from outside: the service runs under
// strace, which records every fsync/fdatasync (with the file behind the descriptor, -y)
// and the bytes on its sockets. A write's answer must come after a sync of the WAL that
// follows its arrival, and a checkpoint (here the shutdown's) must sync the data files.
// PGlite as shipped runs with fsync off and its file layer drops the syncs: both are
// fixed (storage/db.ts, patches/@electric-sql+pglite+*.patch). Without strace (or ptrace)
// this fails: it never skips.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { signupAdmin } from '../helpers/admin.js';
import { seedEmbeddedDataDir } from '../helpers/embedded.js';
import { request } from '../helpers/http.js';
import { runMain } from '../helpers/process.js';
import { testKeys } from '../helpers/service.js';

t.setTimeout(180_000);

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

t.test('a write is answered after its WAL is synced; a checkpoint syncs the data files', async (t) => {
  execFileSync('strace', ['-V']); // throws (the test fails) when strace is missing
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-durable-'));
  const traceDir = mkdtempSync(join(tmpdir(), 'vault-durable-trace-'));
  t.teardown(() => {
    rmSync(dataDir, { recursive: true, force: true });
    if (!process.env.KEEP_TRACE) rmSync(traceDir, { recursive: true, force: true });
  });
  await seedEmbeddedDataDir(dataDir);
  const traceFile = join(traceDir, 'trace');
  const env = { NODE_ENV: 'test', ...testKeys(), DATA_DIR: dataDir, DB_WAIT_SECONDS: '10' };
  const strace = ['strace', '-f', '-y', '-s', '160', '-e', 'trace=fsync,fdatasync,read,recvfrom,recvmsg,write,writev,sendto,sendmsg', '-o', traceFile];
  const service = runMain(env, [], undefined, strace);
  t.teardown(() => service.stop('SIGKILL'));
  const url = await service.listening;

  const admin = await signupAdmin(url);
  t.equal((await request(`${url}/api/v1/projects`, { method: 'POST', token: admin.token, json: { projectName: 'homelab' } })).status, 200);
  // The key names the request: its first line, as read from the socket, carries it.
  const key = `DURABLE_${randomBytes(8).toString('hex').toUpperCase()}`;
  const scope = { projectSlug: 'homelab', environment: 'prod', secretPath: '/' };
  const write = await request(`${url}/api/v3/secrets/raw/${key}`, { method: 'POST', token: admin.token, json: { ...scope, secretValue: 'kept' } });
  t.equal(write.status, 200, 'the write is answered 200');

  // A graceful stop: PostgreSQL's shutdown checkpoint runs in it. SIGTERM goes to the
  // service itself (strace's child), not to strace.
  const tracer = service.pid!;
  const children = readFileSync(`/proc/${tracer}/task/${tracer}/children`, 'utf8').trim().split(/\s+/).map(Number);
  t.equal(children.length, 1, 'strace runs one process, the service');
  process.kill(children[0]!, 'SIGTERM');
  const { code } = await service.exit;
  t.equal(code, 0, 'the service stopped cleanly');

  const lines = readFileSync(traceFile, 'utf8').split('\n');
  const pglite = escape(join(dataDir, 'pglite'));
  const walSync = new RegExp(`\\bf(?:data)?sync\\(\\d+<${pglite}/pg_wal/[0-9A-F]{24}>\\)`);
  const dataSync = new RegExp(`\\bfsync\\(\\d+<${pglite}/base/\\d+/\\d+>\\)`);
  const controlSync = new RegExp(`\\bfsync\\(\\d+<${pglite}/global/pg_control>\\)`);
  const failed = lines.filter((l) => /\bf(?:data)?sync\(/.test(l) && /= -1 /.test(l));
  t.same(failed, [], 'no sync failed');

  // The request's arrival: the read of its first line from a socket (-y names it
  // `fd<socket:[inode]>`); its answer: the first 200 written to that same socket after it.
  const arrival = lines.findIndex((l) => /^\d+ +(?:read|recvfrom|recvmsg)\(\d+<socket:/.test(l) && l.includes(`POST /api/v3/secrets/raw/${key} HTTP/1.1`));
  t.ok(arrival >= 0, 'the request is seen arriving on its socket');
  const socket = /\((\d+<socket:\[\d+\]>)/.exec(lines[arrival] ?? '')?.[1] ?? 'none';
  const answer = lines.findIndex((l, i) => i > arrival && new RegExp(`^\\d+ +(?:write|writev|sendto|sendmsg)\\(${escape(socket)}`).test(l) && l.includes('HTTP/1.1 200'));
  t.ok(answer > arrival, 'its 200 is seen leaving on the same socket');
  const between = lines.slice(arrival + 1, answer);
  t.ok(
    between.some((l) => walSync.test(l)),
    'a sync of a WAL segment of the data folder lies between the arrival and the answer',
  );

  const after = lines.slice(answer + 1);
  t.ok(after.some((l) => dataSync.test(l)), 'the shutdown checkpoint fsyncs data files (base/…)');
  t.ok(after.some((l) => controlSync.test(l)), 'and pg_control');
});
