// How the commands reach the service's database and keys: the same environment
// variables as the service (DATABASE_URL, or the embedded database in DATA_DIR).
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { connectDatabase, type Database } from '../../storage/db.js';
import { adminSocketPath, askService } from '../adminChannel.js';
import { ConfigError, DEV_KEYS_FILE, parseConfig, withDevelopmentKeys, type Config } from '../config.js';
import { createServices, type Services } from '../services.js';
import { CliError, stderrLog, type Io } from './command.js';

export interface DatabaseTarget {
  databaseUrl?: string;
  /** DATABASE_CA_FILE, as the service reads it. */
  caFile?: string;
  dataDir: string;
  waitMs: number;
}

export function databaseTarget(env: Record<string, string | undefined>): DatabaseTarget {
  const databaseUrl = env.DATABASE_URL?.trim() || undefined;
  const dataDir = resolve(env.DATA_DIR || './data');
  const raw = env.DB_WAIT_SECONDS ?? '30';
  const seconds = Number(raw);
  if (!Number.isInteger(seconds) || seconds < 0) throw new CliError(`invalid DB_WAIT_SECONDS: ${raw}`);
  return { databaseUrl, caFile: env.DATABASE_CA_FILE?.trim() || undefined, dataDir, waitMs: seconds * 1000 };
}

export function describeTarget(t: DatabaseTarget): string {
  if (!t.databaseUrl) return `embedded database in ${t.dataDir}`;
  try {
    const u = new URL(t.databaseUrl);
    return `PostgreSQL ${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`; // never the password
  } catch {
    return 'PostgreSQL (DATABASE_URL)';
  }
}

/** A command never creates an embedded database: a wrong DATA_DIR would start an empty one. */
function assertEmbeddedExists(dataDir: string): void {
  if (!existsSync(join(dataDir, 'pglite'))) {
    throw new CliError(
      `no database found: DATABASE_URL is not set and ${dataDir} holds no embedded database ` +
        '(set DATABASE_URL, or DATA_DIR to the service\'s data folder)',
    );
  }
}

/**
 * With the embedded database, asks a running service (its admin socket) to do `request`:
 * its answer, or undefined when no service runs there (open the folder directly then).
 * Its refusal ("User with email … not found") is a CliError.
 */
export async function askRunningService(env: Record<string, string | undefined>, request: object): Promise<Buffer | undefined> {
  const target = databaseTarget(env);
  if (target.databaseUrl) return undefined;
  return askService(adminSocketPath(target.dataDir), request).catch((err: Error) => {
    throw new CliError(err.message.replace(/^newPassword/, 'the password'));
  });
}

/** Opens the database named by the environment; never creates an embedded one. */
export async function openDatabase(env: Record<string, string | undefined>, io: Io, poolSize?: number): Promise<Database> {
  const target = databaseTarget(env);
  if (!target.databaseUrl) assertEmbeddedExists(target.dataDir);
  try {
    return await connectDatabase({ ...target, poolSize, log: (m) => io.err(m) });
  } catch (err) {
    throw new CliError(`cannot open the ${describeTarget(target)}: ${(err as Error).message}`);
  }
}

/**
 * The service configuration for commands that open values (seed-inventory). AUTH_SECRET
 * is not needed (the CLI signs nothing), so a throwaway one stands in for it. Outside
 * production, a data folder's development keys are used when ENCRYPTION_KEY is unset,
 * but never generated: a new key would not open existing data.
 */
export async function serviceConfig(env: Record<string, string | undefined>, io: Io): Promise<Config> {
  let e = { ...env };
  const target = databaseTarget(e);
  if (!target.databaseUrl) assertEmbeddedExists(target.dataDir);
  const devKeys = join(target.dataDir, DEV_KEYS_FILE);
  if (e.ENCRYPTION_KEY === undefined && (e.NODE_ENV ?? 'development') !== 'production' && existsSync(devKeys)) {
    e = withDevelopmentKeys({ ...e, AUTH_SECRET: undefined }).env;
    io.err(`using the development ENCRYPTION_KEY from ${devKeys}`);
  }
  if (e.ENCRYPTION_KEY === undefined && (e.KEY_PROVIDER ?? 'local') !== 'pkcs11') {
    throw new CliError('ENCRYPTION_KEY is not set: run with the environment of the service (ENCRYPTION_KEY and DATABASE_URL)');
  }
  try {
    return parseConfig({
      ...e,
      AUTH_SECRET: randomBytes(32).toString('base64'),
      PORT: '0',
      CRYPTO_THREADS: e.CRYPTO_THREADS ?? '1',
      DB_WAIT_SECONDS: String(target.waitMs / 1000),
    });
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message);
    throw err;
  }
}

/**
 * The service's composition root for a command that works through the domain (seed
 * inventory, reset a password): the service's configuration, started without the first
 * visit's setup code, closed when `work` ends.
 */
export async function withServices<T>(env: Record<string, string | undefined>, io: Io, work: (services: Services, config: Config) => Promise<T>): Promise<T> {
  const config = await serviceConfig(env, io);
  let services: Services;
  try {
    services = await createServices(config, stderrLog(io), { firstVisit: false });
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  try {
    return await work(services, config);
  } finally {
    await services.close();
  }
}
