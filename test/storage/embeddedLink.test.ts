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
