// The local admin channel of a service on the embedded database: a unix socket in
// DATA_DIR/run (a 0700 folder; the socket itself 0600), so only the service's own user
// can reach it. The embedded database admits one process, so commands that must run
// beside the service (backup, audit-verify, reset-password) ask the service through it
// instead of opening the folder.
//
// Protocol: the client sends one line, the command: `backup`, or a JSON object
// ({"command":"audit-verify","recordedHead":…}, {"command":"reset-password","email":…,
// "password":…}); the service answers one line, `ok <bytes>` followed by exactly that
// many bytes (the backup, or the answer's JSON), or `error <message>`, and closes the
// connection. Nothing of a request (a password) is logged.
import { chmod, rm } from 'node:fs/promises';
import { createConnection, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { AuditVerification } from '../storage/audit.js';
import { SYSTEM } from './domain/access.js';
import { headSummary, type AuditHeadSummary } from './domain/audit.js';
import { AppError } from './errors.js';
import type { Logger } from './log.js';
import type { Services } from './services.js';

export const ADMIN_SOCKET = 'admin.sock';
export const adminSocketPath = (dataDir: string) => join(dataDir, 'run', ADMIN_SOCKET);

/** A request line: room for an e-mail address and a 256-character password in JSON. */
const MAX_COMMAND = 4096;

export type RecordedHead = { lastId: number; macPrefix: string };
/** audit-verify's result as the channel carries it: the head summarised (count, last id, MAC prefix). */
export type RemoteAuditVerification = (Omit<Extract<AuditVerification, { ok: true }>, 'head'> & { head: AuditHeadSummary }) | Extract<AuditVerification, { ok: false }>;

export interface AdminHandlers {
  backup?(): Promise<Uint8Array>;
  auditVerify(recordedHead?: RecordedHead): Promise<RemoteAuditVerification>;
  resetPassword(email: string, password: string): Promise<{ email: string; disabled: boolean }>;
}

/** What the running service answers with: its own database, audit key and domain. */
export function serviceHandlers(services: Pick<Services, 'db' | 'store' | 'users'>): AdminHandlers {
  return {
    backup: services.db.backup,
    async auditVerify(recordedHead) {
      // Every entry and checkpoint, in short statements that let the service's other callers in between.
      const r = await services.store.auditVerify.full({ recordedHead });
      if (!r.complete) throw new AppError('UNAVAILABLE', 'the service is shutting down');
      const { complete: _c, read: _r, checkpoints: _p, newestCheckpoint: _n, ...v } = r;
      return v.ok ? { ...v, head: headSummary(v.head) } : v;
    },
    async resetPassword(email, password) {
      const user = await services.users.resetPassword(SYSTEM, { email }, password);
      return { email: user.email, disabled: user.disabled };
    },
  };
}

type Request = { command: 'backup' } | { command: 'audit-verify'; recordedHead?: RecordedHead } | { command: 'reset-password'; email: string; password: string };

function parseRequest(line: string): Request | undefined {
  if (line === 'backup') return { command: 'backup' };
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof o !== 'object' || o === null) return undefined;
  if (o.command === 'audit-verify') {
    const h = o.recordedHead as RecordedHead | undefined;
    if (h === undefined) return { command: 'audit-verify' };
    if (typeof h === 'object' && h !== null && Number.isSafeInteger(h.lastId) && typeof h.macPrefix === 'string' && /^[0-9a-f]{1,64}$/.test(h.macPrefix)) {
      return { command: 'audit-verify', recordedHead: { lastId: h.lastId, macPrefix: h.macPrefix } };
    }
    return undefined;
  }
  if (o.command === 'reset-password' && typeof o.email === 'string' && typeof o.password === 'string') {
    return { command: 'reset-password', email: o.email, password: o.password };
  }
  return undefined;
}

export async function startAdminChannel(dataDir: string, handlers: AdminHandlers, log: Logger): Promise<{ close(): Promise<void> }> {
  const path = adminSocketPath(dataDir);
  // The embedded lock (taken before) says no live service owns this folder: a socket left here is stale.
  await rm(path, { force: true });
  const answer = async (req: Request): Promise<Uint8Array> => {
    switch (req.command) {
      case 'backup': {
        if (!handlers.backup) throw new AppError('VALIDATION', 'unknown command');
        const started = performance.now();
        const bytes = await handlers.backup();
        log.info({ event: 'backup', bytes: bytes.length, ms: Math.round(performance.now() - started) }, 'backup taken over the admin channel');
        return bytes;
      }
      case 'audit-verify': {
        const r = await handlers.auditVerify(req.recordedHead);
        log.info({ event: 'audit-verify', ok: r.ok, entries: r.entries }, 'audit trail verified over the admin channel');
        return Buffer.from(JSON.stringify(r));
      }
      case 'reset-password': {
        const r = await handlers.resetPassword(req.email, req.password);
        log.info({ event: 'reset-password' }, 'password reset over the admin channel');
        return Buffer.from(JSON.stringify(r));
      }
    }
  };
  const server: Server = createServer((conn) => {
    let line = '';
    conn.setEncoding('utf8');
    conn.on('error', () => {});
    conn.on('data', (chunk: string) => {
      line += chunk;
      const nl = line.indexOf('\n');
      if (nl === -1) {
        if (line.length > MAX_COMMAND) {
          conn.removeAllListeners('data');
          conn.end('error command too long\n');
        }
        return;
      }
      conn.removeAllListeners('data');
      const req = nl <= MAX_COMMAND ? parseRequest(line.slice(0, nl).trim()) : undefined;
      line = '';
      if (!req) {
        conn.end('error unknown command\n');
        return;
      }
      answer(req).then(
        (bytes) => {
          conn.write(`ok ${bytes.length}\n`);
          conn.end(bytes);
        },
        (err: Error) => {
          // A domain refusal (nobody with this e-mail, a password too short) is the caller's
          // to read; anything else is named by its kind only, the log has the rest.
          if (!(err instanceof AppError)) log.error({ event: req.command, err: err.message }, `${req.command} over the admin channel failed`);
          const message = err instanceof AppError || req.command === 'backup' ? err.message : `${err.name} (see the service's log)`;
          conn.end(`error ${message.replace(/\n/g, ' ')}\n`);
        },
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
  await chmod(path, 0o600);
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        void rm(path, { force: true });
      }),
  };
}

/** The service's answer to `request`; undefined when no service listens at `path`. */
export function askService(path: string, request: string | object): Promise<Buffer | undefined> {
  const line = typeof request === 'string' ? request : JSON.stringify(request);
  return new Promise((resolve, reject) => {
    const conn = createConnection(path);
    const chunks: Buffer[] = [];
    let connected = false;
    conn.on('connect', () => {
      connected = true;
      conn.write(`${line}\n`);
    });
    conn.on('data', (c: Buffer) => chunks.push(c));
    conn.on('error', (err: NodeJS.ErrnoException) => {
      if (!connected && (err.code === 'ENOENT' || err.code === 'ECONNREFUSED')) resolve(undefined);
      else reject(err);
    });
    conn.on('end', () => {
      const all = Buffer.concat(chunks);
      const nl = all.indexOf(10);
      const head = all.subarray(0, nl === -1 ? all.length : nl).toString('utf8');
      const m = /^ok (\d+)$/.exec(head);
      if (!m) {
        reject(new Error(head.startsWith('error ') ? head.slice(6) : 'the service answered something unexpected'));
        return;
      }
      const body = all.subarray(nl + 1);
      if (body.length !== Number(m[1])) {
        reject(new Error(`the answer was cut short (${body.length} of ${m[1]} bytes)`));
        return;
      }
      resolve(body);
    });
  });
}

/** Asks the service behind `path` for a backup; undefined when no service listens there. */
export async function requestBackup(path: string): Promise<Uint8Array | undefined> {
  const body = await askService(path, 'backup');
  return body === undefined ? undefined : new Uint8Array(body);
}
