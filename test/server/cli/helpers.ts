// The CLI as a real child process with a controlled environment, and the service's
// composition root in-process to set up and read back what the CLI did.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig } from '../../../server/config.js';
import { dataKeyAad } from '../../../server/domain/keyring.js';
import { secretAad } from '../../../server/domain/secrets.js';
import { createServices, type Services } from '../../../server/services.js';
import { connectDatabase, type Sql } from '../../../storage/db.js';
import { freshDatabase } from '../../helpers/db.js';
import { nodeCommand } from '../../helpers/process.js';
import { seedEmbeddedDataDir } from '../../helpers/embedded.js';
import { quietLog, testKeys } from '../../helpers/service.js';

export const CLI = fileURLToPath(new URL('../../../server/cli/main.js', import.meta.url));
/** The same command line with test seams (fixtureCliWithHooks.ts): TEST_FAIL_AT_STEP, TEST_PAUSE_AT_STEP. */
const CLI_WITH_HOOKS = fileURLToPath(new URL(`./fixtureCliWithHooks${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url));
/** The repository root (dist/test/server/cli -> ../../../..). */
export const REPO = fileURLToPath(new URL('../../../../', import.meta.url));

interface TapLike {
  teardown(fn: () => unknown): void;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  child: ChildProcess;
  exit: Promise<CliResult>;
  /** Resolves when stderr has matched `re`; rejects if the process exits first. */
  stderrMatch(re: RegExp): Promise<void>;
}

export function spawnCli(args: string[], env: Record<string, string>, cwd?: string, entry = CLI): CliProcess {
  const child = spawn(...nodeCommand([entry, ...args]), {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), ...env },
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const watchers: Array<{ re: RegExp; done: () => void }> = [];
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => {
    stderr += d;
    for (const w of [...watchers]) {
      if (w.re.test(stderr)) {
        watchers.splice(watchers.indexOf(w), 1);
        w.done();
      }
    }
  });
  const exit = new Promise<CliResult>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return {
    child,
    exit,
    stderrMatch: (re) =>
      new Promise<void>((resolve, reject) => {
        if (re.test(stderr)) return resolve();
        watchers.push({ re, done: resolve });
        void exit.then((r) => reject(new Error(`exited (${r.code ?? r.signal}) before stderr matched ${re}: ${r.stderr}`)));
      }),
  };
}

export const runCli = (args: string[], env: Record<string, string>, cwd?: string): Promise<CliResult> =>
  spawnCli(args, env, cwd).exit;

/** The CLI with its test seams: `steps.failAt` throws at that step, `steps.pauseAt` waits there for SIGUSR2. */
export const spawnCliWithHooks = (args: string[], env: Record<string, string>, steps: { failAt?: number; pauseAt?: number }): CliProcess =>
  spawnCli(
    args,
    {
      ...env,
      ...(steps.failAt === undefined ? {} : { TEST_FAIL_AT_STEP: String(steps.failAt) }),
      ...(steps.pauseAt === undefined ? {} : { TEST_PAUSE_AT_STEP: String(steps.pauseAt) }),
    },
    undefined,
    CLI_WITH_HOOKS,
  );

export function tempDir(t: TapLike, prefix = 'vault-cli-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export type Backend = 'postgres' | 'embedded';

/** The service's environment: fresh keys and a fresh database (no Redis: the CLI's own default). */
export async function cliEnv(t: TapLike, backend: Backend): Promise<Record<string, string>> {
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    ...testKeys(),
    DATA_DIR: tempDir(t, 'vault-cli-data-'),
    CRYPTO_THREADS: '1',
    DB_WAIT_SECONDS: '10',
  };
  if (backend === 'postgres') env.DATABASE_URL = await freshDatabase(t);
  // The embedded database starts from a copy of the initdb template (helpers/embedded.ts).
  else await seedEmbeddedDataDir(env.DATA_DIR!);
  return env;
}

/** The service's composition root (what startService runs before listening); close() is idempotent. */
export async function openServices(t: TapLike, env: Record<string, string>): Promise<Services> {
  const services = await createServices(parseConfig(env), quietLog);
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= services.close());
  t.teardown(close);
  return { ...services, close };
}

export interface StoredSecret {
  value: string;
  comment: string;
  version: number;
  immutable: boolean;
}

/** Every secret of every project, opened through the store and the crypto workers: `slug/env/path/KEY` -> secret. */
export async function readAll(services: Services): Promise<Map<string, StoredSecret>> {
  const { store, crypto } = services;
  const out = new Map<string, StoredSecret>();
  for (const p of await store.projects.list()) {
    const project = (await store.projects.byId(p.id))!;
    for (const env of project.environments) {
      const folders = await store.folders.subtree(env.id, '/');
      const pathOf = new Map(folders.map((f) => [f.id, f.path]));
      const rows = await store.secrets.listByFolders(folders.map((f) => f.id));
      for (const r of rows) {
        // Each row with the data key it names (during an online rekey, old and new coexist).
        const at = { projectId: project.id, environmentId: env.id, folderId: r.folderId, secretId: r.id, key: r.key, version: r.version };
        const items = [{ blob: r.valueBlob, aad: secretAad('value', at) }, ...(r.commentBlob ? [{ blob: r.commentBlob, aad: secretAad('comment', at) }] : [])];
        const [value, comment = ''] = await crypto.openMany(r.wrappedKey, dataKeyAad(r.dataKeyId), items);
        const path = pathOf.get(r.folderId)!;
        out.set(`${project.slug}/${env.slug}${path === '/' ? '' : path}/${r.key}`, { value: value!, comment, version: r.version, immutable: r.immutable });
      }
    }
  }
  return out;
}

/** The database alone, as someone with write access to it has it (no service, no key). */
export async function withDatabase<T>(env: Record<string, string>, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const db = await connectDatabase({ databaseUrl: env.DATABASE_URL, dataDir: env.DATA_DIR!, waitMs: 10_000 });
  try {
    return await fn(db.sql);
  } finally {
    await db.close();
  }
}

/** The head line audit-verify prints. */
export function printedHead(stdout: string) {
  const m = /^head: (\d+) entr(?:y|ies), last id (\d+), mac ([0-9a-f]{16})$/m.exec(stdout);
  if (!m) throw new Error(`no head in: ${stdout}`);
  return { entries: Number(m[1]), lastId: Number(m[2]), mac: m[3]! };
}
