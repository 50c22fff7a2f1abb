// postgres.js over the in-process link to a real (in-memory) PGlite: what postgres.js
// pipelines reaches PGlite in one call; an error skips to the next Sync as on a socket;
// a Terminate or a cancel request closes the link and never reaches PGlite; a link
// dropped inside a transaction leaves none open.
import { PGlite } from '@electric-sql/pglite';
import postgres from 'postgres';
import t from 'tap';
import { PgliteLink, type PgliteLike } from '../../storage/embeddedLink.js';

const db = await PGlite.create();
t.teardown(() => db.close());

/** The PGlite the links see: every protocol call's bytes recorded. */
const calls: Uint8Array[] = [];
const counted: PgliteLike = {
  runExclusive: (fn) => db.runExclusive(fn),
  execProtocolRawStream: (message, opts) => {
    calls.push(message);
    return db.execProtocolRawStream(message, opts);
  },
  isInTransaction: () => db.isInTransaction(),
  exec: (q) => db.exec(q),
};
const links: PgliteLink[] = [];
const connect = () =>
  postgres({
    ...({ socket: () => links[links.push(new PgliteLink(counted)) - 1] } as postgres.Options<Record<string, postgres.PostgresType>>),
    database: 'postgres',
    username: 'postgres',
    max: 1,
    onnotice: () => {},
  });

const sql = connect();
t.teardown(() => sql.end({ timeout: 1 }));
await sql`create table items (id int primary key, v text)`;

t.test('pipelined statements reach PGlite in one call and each gets its own answer', async (t) => {
  await sql`select 1`;
  const before = calls.length;
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => sql`select ${i}::int as i, ${'v' + i}::text as v`));
  t.same(
    answers.map((r) => r[0]),
    Array.from({ length: 20 }, (_, i) => ({ i, v: `v${i}` })),
  );
  t.ok(calls.length - before < 20, `20 statements, ${calls.length - before} calls`);
});

t.test('an error in a pipelined transaction rolls it back; the connection goes on', async (t) => {
  await sql`insert into items values (1, 'one')`;
  await t.rejects(
    sql.begin((tx) => [tx`insert into items values (2, 'two')`, tx`insert into items values (1, 'again')`, tx`insert into items values (3, 'three')`]),
    { code: '23505' },
  );
  t.same(await sql`select id, v from items order by id`, [{ id: 1, v: 'one' }], 'nothing of the transaction stayed');
  t.notOk(db.isInTransaction());
});

t.test('a Terminate closes the link and never reaches PGlite', async (t) => {
  const other = connect();
  await other`select 1`;
  const link = links[links.length - 1]!;
  const closed = new Promise((done) => link.once('close', done));
  await other.end({ timeout: 1 });
  await closed;
  t.equal(link.readyState, 'closed');
  t.notOk(
    calls.some((c) => c[0] === 0x58),
    'no call began with X',
  );
  t.same(await sql`select count(*)::int as n from items`, [{ n: 1 }], 'PGlite still answers');
});

t.test('a link dropped inside a transaction leaves none open', async (t) => {
  const other = connect();
  await t.rejects(
    other.begin(async (tx) => {
      await tx`insert into items values (9, 'nine')`;
      t.ok(db.isInTransaction(), 'the transaction is open');
      links[links.length - 1]!.destroy();
      await tx`select 1`;
    }),
  );
  await other.end({ timeout: 1 });
  t.notOk(db.isInTransaction(), 'rolled back');
  t.same(await sql`select id from items order by id`, [{ id: 1 }]);
});

t.test('a cancel request closes its link; TLS is declined', async (t) => {
  const cancel = new PgliteLink(counted);
  const closed = new Promise((done) => cancel.once('close', done));
  const message = Buffer.alloc(16);
  message.writeInt32BE(16, 0);
  message.writeInt32BE(80877102, 4);
  cancel.write(message);
  await closed;
  t.equal(cancel.readyState, 'closed');

  const tls = new PgliteLink(counted);
  const answer = new Promise<Buffer>((done) => tls.once('data', done));
  const request = Buffer.alloc(8);
  request.writeInt32BE(8, 0);
  request.writeInt32BE(80877103, 4);
  tls.write(request);
  t.equal((await answer).toString(), 'N');
  tls.destroy();
});

// A statement above the stream's high-water mark (16 KB): postgres.js moves the
// connection to its "full" queue and waits for 'drain'. If the link reports the bytes
// written only once PGlite has answered, 'drain' comes after ReadyForQuery with no query
// active, and postgres.js used to hand the transaction's connection to the pool
// (issue 31): other callers' statements ran inside the transaction.
t.test('a transaction with statements over 64 KB never runs another caller statement', async (t) => {
  const pool = connect();
  t.teardown(() => pool.end({ timeout: 1 }));
  await pool`create table big (id int primary key, v text)`;
  const big = 'x'.repeat(100_000);
  // Outside the transaction no transaction id is assigned to a plain select, and the
  // row it inserts (and deletes before committing) is never visible.
  const probe = () => pool<{ xid: string | null; n: number }[]>`
    select txid_current_if_assigned()::text as xid, (select count(*)::int from big where id = 1) as n`.execute();
  const others: Array<Promise<{ xid: string | null; n: number }[]>> = [];
  let inside: string | undefined;
  // Between its statements the transaction gives the event loop a turn, as the service's
  // do while they wait for the crypto workers: that is when 'drain' arrives.
  const turn = () => new Promise((done) => setImmediate(done));
  await pool.begin(async (tx) => {
    await tx`insert into big values (1, ${big})`;
    inside = (await tx<{ xid: string }[]>`select txid_current()::text as xid`)[0]?.xid;
    for (let i = 0; i < 5; i++) {
      others.push(probe());
      await turn();
      await tx`update big set v = ${big + i} where id = 1`;
      await turn();
      others.push(probe());
      await tx`select ${big}::text as echo`;
      await turn();
    }
    await tx`delete from big where id = 1`;
  });
  const seen = (await Promise.all(others)).map((r) => r[0]!);
  t.equal(seen.length, 10);
  t.same(
    seen.filter((r) => r.xid !== null || r.n !== 0),
    [],
    `no other caller ran inside transaction ${inside} (it would see its xid or its uncommitted row)`,
  );
  t.notOk(db.isInTransaction());
});

t.test('the link accepts bytes as a socket does: drain before the answer', async (t) => {
  const link = new PgliteLink(counted);
  t.teardown(() => link.destroy());
  const events: string[] = [];
  let received = Buffer.alloc(0);
  let ready: (() => void) | undefined;
  link.on('drain', () => events.push('drain'));
  link.on('data', (b: Buffer) => {
    events.push('data');
    received = Buffer.concat([received, b]);
    // ReadyForQuery ('Z', length 5, status) ends an answer.
    if (received.length >= 6 && received[received.length - 6] === 0x5a) ready?.();
  });
  const answered = () => new Promise<void>((done) => (ready = done));
  const params = Buffer.from('user\0postgres\0database\0postgres\0\0');
  const startup = Buffer.alloc(8);
  startup.writeInt32BE(8 + params.length, 0);
  startup.writeInt32BE(196608, 4);
  let next = answered();
  link.write(Buffer.concat([startup, params]));
  await next;
  events.length = 0;
  // A 100 KB simple query, over the high-water mark (16 KB).
  const text = Buffer.from(`select '${'y'.repeat(100_000)}'\0`);
  const q = Buffer.alloc(5);
  q[0] = 0x51;
  q.writeInt32BE(4 + text.length, 1);
  next = answered();
  const room = link.write(Buffer.concat([q, text]));
  await next;
  // Whether write() said "full" or not, a 'drain' it owes has come by the answer, before it.
  t.notOk(link.writableNeedDrain, `no 'drain' still owed once answered (write() said ${room})`);
  t.same(events.slice(events.indexOf('data')).filter((e) => e === 'drain'), [], `no 'drain' after the answer: ${events.join(',')}`);
});
