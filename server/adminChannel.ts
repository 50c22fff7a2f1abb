// The local admin channel of a service on the embedded database: a unix socket in
// DATA_DIR/run (a 0700 folder; the socket itself 0600), so only the service's own user
// can reach it. The embedded database admits one process, so commands that must run
// beside the service (backup) ask the service through it instead of opening the folder.
//
// Protocol: the client sends one line, the command (`backup`); the service answers one
// line, `ok <bytes>` followed by exactly that many bytes, or `error <message>`, and
// closes the connection.
import { chmod, rm } from 'node:fs/promises';
import { createConnection, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { Database } from '../storage/db.js';
import type { Logger } from './log.js';

export const ADMIN_SOCKET = 'admin.sock';
export const adminSocketPath = (dataDir: string) => join(dataDir, 'run', ADMIN_SOCKET);

const MAX_COMMAND = 64;

export async function startAdminChannel(dataDir: string, db: Pick<Database, 'backup'>, log: Logger): Promise<{ close(): Promise<void> }> {
  const path = adminSocketPath(dataDir);
  // The embedded lock (taken before) says no live service owns this folder: a socket left here is stale.
  await rm(path, { force: true });
  const server: Server = createServer((conn) => {
    let line = '';
    conn.setEncoding('utf8');
    conn.on('error', () => {});
    conn.on('data', (chunk: string) => {
      line += chunk;
      const nl = line.indexOf('\n');
      if (nl === -1) {
        if (line.length > MAX_COMMAND) conn.end('error command too long\n');
        return;
      }
      conn.removeAllListeners('data');
      const command = line.slice(0, nl).trim();
      if (command !== 'backup' || !db.backup) {
        conn.end(`error unknown command\n`);
        return;
      }
      const started = performance.now();
      db.backup().then(
        (bytes) => {
          log.info({ event: 'backup', bytes: bytes.length, ms: Math.round(performance.now() - started) }, 'backup taken over the admin channel');
          conn.write(`ok ${bytes.length}\n`);
          conn.end(bytes);
        },
        (err: Error) => {
          log.error({ event: 'backup', err: err.message }, 'backup failed');
          conn.end(`error ${err.message.replace(/\n/g, ' ')}\n`);
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

/** Asks the service behind `path` for a backup; undefined when no service listens there. */
export function requestBackup(path: string): Promise<Uint8Array | undefined> {
  return new Promise((resolve, reject) => {
    const conn = createConnection(path);
    const chunks: Buffer[] = [];
    let connected = false;
    conn.on('connect', () => {
      connected = true;
      conn.write('backup\n');
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
        reject(new Error(`the backup was cut short (${body.length} of ${m[1]} bytes)`));
        return;
      }
      resolve(new Uint8Array(body));
    });
  });
}
