// The fault suite's own dependencies and processes: a private PostgreSQL cluster
// (initdb + pg_ctl in a temporary directory, on a free port) that a test may stop,
// crash or freeze, and the service as real child processes of dist/server/main.js.
// The shared PostgreSQL (5432) and Redis (6379) are never stopped or frozen here.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { nodeCommand } from '../helpers/process.js';
import { freePort } from '../helpers/redis.js';

const run = promisify(execFile);
const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
const MAIN = fileURLToPath(new URL('../../server/main.js', import.meta.url));

interface TapLike {
  teardown(fn: () => unknown): void;
}

/** The postgres user's uid/gid when running as root (PostgreSQL refuses to run as root). */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('running as root, and there is no postgres user to run PostgreSQL as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

export class PrivatePostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly asUser: { uid: number; gid: number } | undefined,
    /** More server options for pg_ctl's -o, after the defaults (a later -c wins). */
    private readonly extraOptions = '',
  ) {}

  /**
   * A fresh cluster on a free port, trust authentication, started; removed at teardown.
   * `prepare` runs after initdb, before the first start (files to put in `dir`, owned by
   * the cluster's user); `options` are more server options (e.g. `-c ssl=on`).
   */
  static async create(t: TapLike, opts: { options?: string; prepare?: (pg: PrivatePostgres) => void | Promise<void> } = {}): Promise<PrivatePostgres> {
    const asUser = postgresUser();
    const dir = mkdtempSync(join(tmpdir(), 'vault-faults-pg-'));
    if (asUser) {
      chownSync(dir, asUser.uid, asUser.gid);
      chmodSync(dir, 0o700);
    }
    const pg = new PrivatePostgres(dir, await freePort(), asUser, opts.options ?? '');
    t.teardown(async () => {
      await pg.resume().catch(() => {});
      await pg.ctl(['stop', '-m', 'immediate']).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    });
    await pg.exec(`${PG_BIN}/initdb`, ['-D', pg.data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    await opts.prepare?.(pg);
    await pg.start();
    return pg;
  }

  /** Makes `path` the cluster user's (PostgreSQL reads its key files only when they are its own). */
  own(path: string): void {
    if (this.asUser) chownSync(path, this.asUser.uid, this.asUser.gid);
  }

  get data(): string {
    return join(this.dir, 'data');
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private exec(file: string, args: string[]) {
    return run(file, args, { uid: this.asUser?.uid, gid: this.asUser?.gid, cwd: this.dir, timeout: 60_000 });
  }

  ctl(args: string[]) {
    return this.exec(`${PG_BIN}/pg_ctl`, ['-D', this.data, '-l', join(this.dir, 'log'), ...args]);
  }

  /** Started and accepting connections (pg_ctl -w). */
  async start(): Promise<void> {
    await this.ctl(['start', '-w', '-o', `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off ${this.extraOptions}`]);
  }

  /** `pg_ctl stop -m immediate`: every backend dies at once, as in a crash. */
  async stopImmediate(): Promise<void> {
    await this.ctl(['stop', '-m', 'immediate', '-w']);
  }

  /** The postmaster's pid and its children's (from postmaster.pid and /proc): this cluster only. */
  private pids(): number[] {
    const main = Number(readFileSync(join(this.data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const out = [main];
    for (const entry of readdirNumbers('/proc')) {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === main) out.push(entry);
      } catch {
        // gone meanwhile
      }
    }
    return out;
  }

  private frozen: number[] = [];

  /** SIGSTOP the postmaster and every backend: connections stay open, nothing answers. */
  freeze(): void {
    this.frozen = this.pids();
    for (const pid of this.frozen) process.kill(pid, 'SIGSTOP');
  }

  async resume(): Promise<void> {
    for (const pid of this.frozen) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // exited
      }
    }
    this.frozen = [];
  }
}

function readdirNumbers(dir: string): number[] {
  return readdirSync(dir)
    .filter((n) => /^\d+$/.test(n))
    .map(Number);
}

export interface ServiceProcess {
  url: string;
  port: number;
  child: ChildProcess;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** True while the process runs. */
  alive(): boolean;
}

export function serviceKeys(): Record<string, string> {
  return { ENCRYPTION_KEY: randomBytes(16).toString('hex'), AUTH_SECRET: randomBytes(32).toString('base64') };
}

/** Spawns dist/server/main.js; resolves once it listens (rejects if it exits first). */
export async function spawnService(t: TapLike, env: Record<string, string>, nodeArgs: string[] = []): Promise<ServiceProcess> {
  const child = spawn(...nodeCommand([...nodeArgs, MAIN]), {
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', HOST: '127.0.0.1', PORT: '0', CRYPTO_THREADS: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  t.teardown(async () => {
    if (process.env.FAULTS_DEBUG) console.error(`--- service ${child.pid} stderr ---\n${err}`);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exit;
    }
  });
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    void exit.then((r) => reject(new Error(`service exited (${r.code ?? r.signal}) before listening: ${err}`)));
  });
  const url = await listening;
  return {
    url,
    port: Number(new URL(url).port),
    child,
    stdout: () => out,
    stderr: () => err,
    exit,
    alive: () => child.exitCode === null && child.signalCode === null,
  };
}

/** Runs dist/server/main.js to its exit (for start-up refusals). */
export function runToExit(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(...nodeCommand([MAIN]), {
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', HOST: '127.0.0.1', CRYPTO_THREADS: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The p-th percentile (0..100) of `values`. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
