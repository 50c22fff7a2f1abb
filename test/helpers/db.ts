// A fresh database per test file on the real PostgreSQL server, dropped afterwards,
// so test files can run in parallel without seeing each other's rows.
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

export const PG_ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function freshDatabase(t: Teardown): Promise<string> {
  const name = `test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  t.teardown(async () => {
    const a = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
    await a.unsafe(`drop database if exists ${name} with (force)`);
    await a.end();
  });
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}
