// The transaction fixes in patches/postgres+3.4.9.patch, against the real PostgreSQL
// over TCP (the upstream-ready text: docs/upstream/postgres-reserved-connection.md):
// - a 'drain' that comes after a transaction's statement was answered (a stream that
//   reports its writes done late; storage/embeddedLink.ts did, issue 31) never hands the
//   reserved connection to the pool;
// - sql.begin reserves its connection whenever BEGIN is written, also when BEGIN is the
//   query that fills the connection's pipeline (porsager/postgres#1189).
// Each probe of another caller must run outside the transaction: no transaction id
// assigned, the transaction's uncommitted row invisible.
import { connect as tcp, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import postgres from 'postgres';
import t from 'tap';
import { freshDatabase } from '../helpers/db.js';

const url = new URL(await freshDatabase(t));

/**
 * A TCP stream to PostgreSQL that reports each write done only after the next bytes
 * from the server have been handed on: every 'drain' comes after the answer.
 */
class LateStream extends Duplex {
  #socket: Socket;
  #owed: Array<() => void> = [];
  constructor() {
    super();
    this.#socket = tcp(Number(url.port || 5432), url.hostname);
    this.#socket.on('data', (b: Buffer) => {
      this.push(b);
      const owed = this.#owed.splice(0);
      for (const done of owed) done();
    });
    this.#socket.on('close', () => {
      for (const done of this.#owed.splice(0)) done();
      this.destroy();
    });
    this.#socket.on('error', (err) => this.destroy(err));
  }
  get readyState(): string {
    return this.destroyed ? 'closed' : 'open';
  }
  override _read(): void {}
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.#socket.write(chunk);
    this.#owed.push(done);
  }
  override _final(done: () => void): void {
    this.#socket.end(done);
  }
  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.#socket.destroy();
    done(err);
  }
}

const options = {
  database: url.pathname.slice(1),
  username: url.username || 'postgres',
  max: 1,
  onnotice: () => {},
} as const;

type Probe = { xid: string | null; n: number };

t.test('a late drain never hands a transaction connection to the pool', async (t) => {
  const sql = postgres({ ...options, ...({ socket: () => new LateStream() } as object) });
  t.teardown(() => sql.end({ timeout: 1 }));
  await sql`create table late (id int primary key, v text)`;
  const big = 'x'.repeat(100_000);
  const probe = () => sql<Probe[]>`select txid_current_if_assigned()::text as xid, (select count(*)::int from late) as n`.execute();
  const others: Array<Promise<Probe[]>> = [];
  // The transaction gives the event loop a turn after each statement, as a caller that
  // awaits other work does: the late 'drain' comes then.
  const turn = () => new Promise((done) => setImmediate(done));
  await sql.begin(async (tx) => {
    await tx`insert into late values (1, ${big})`;
    for (let i = 0; i < 3; i++) {
      others.push(probe());
      await turn();
      await tx`update late set v = ${big + i}`;
      await turn();
    }
    await tx`delete from late`;
  });
  const seen = (await Promise.all(others)).map((r) => r[0]!);
  t.equal(seen.length, 3);
  t.same(
    seen.filter((r) => r.xid !== null || r.n !== 0),
    [],
    'no probe ran inside the transaction',
  );
});

t.test('BEGIN that fills the pipeline still reserves its connection', async (t) => {
  // max_pipeline is missing from postgres.js' type declarations.
  const sql = postgres({ ...options, host: url.hostname, port: Number(url.port || 5432), ...({ max_pipeline: 1 } as object) });
  t.teardown(() => sql.end({ timeout: 1 }));
  await sql`create table boundary (id int primary key)`;
  // The connection busy with one query: BEGIN is pipelined behind it, as the last the
  // pipeline takes.
  const first = sql`select 1`.execute();
  const others: Array<Promise<Probe[]>> = [];
  const done = sql.begin(async (tx) => {
    others.push(sql<Probe[]>`select txid_current_if_assigned()::text as xid, (select count(*)::int from boundary) as n`.execute());
    await tx`insert into boundary values (1)`;
    await tx`delete from boundary`;
  });
  await first;
  await t.resolves(done, 'the transaction runs');
  const seen = (await Promise.all(others)).map((r) => r[0]!);
  t.same(
    seen.filter((r) => r.xid !== null || r.n !== 0),
    [],
    'no probe ran inside the transaction',
  );
});
