// AUTH_SECRET plus a full read of the database (or of a backup) makes no working token:
// every access token and session carries a random secret part whose hash alone is stored.
// With logins, sessions, a renewal, a logout and a revocation on record, every row of
// every table is dumped; tokens are then forged with AUTH_SECRET for every id found, in
// the real claim layout (jti, sub, identityId / userId, clientSecretId, method), with
// every 32-byte value of the dump (the stored hashes among them), a random one or none
// as the secret part: each is refused (401) on use, renew and revoke. Nor does the audit
// trail or the log hold a live token or its secret part.
import t from 'tap';
import { startService } from '../../../server/app.js';
import { identityTokens, newTokenSecret, userSessionTokens, type IdentityTokenClaims } from '../../../server/auth/tokens.js';
import { parseConfig } from '../../../server/config.js';
import type { Logger } from '../../../server/services.js';
import { signupAdmin } from '../../helpers/admin.js';
import { request } from '../../helpers/http.js';
import { login, seedHomelab, testEnv } from '../../helpers/service.js';
import { machine, plainUser } from '../admin/helpers.js';

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

t.test('tokens forged with AUTH_SECRET from a dump of every table are refused', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const logLines: string[] = [];
  const capture = (m: unknown) => void logLines.push(typeof m === 'string' ? m : JSON.stringify(m));
  const logger: Logger = { info: capture, warn: capture, error: capture };
  const service = await startService(parseConfig(env), logger);
  t.teardown(() => service.close());
  const svc = { ...service, url: `http://127.0.0.1:${service.port}`, env };
  const authSecret = Buffer.from(env.AUTH_SECRET!, 'base64');
  const sessions = userSessionTokens(authSecret);
  const identities = identityTokens(authSecret);
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const READ = '/api/v3/secrets/raw?workspaceSlug=homelab&environment=prod';

  // What the database holds after real use: the superadmin's and a person's sessions (one
  // ended), ESO's tokens (one renewed, one revoked), another machine's.
  const admin = await signupAdmin(svc.url);
  const plain = await plainUser(svc, 'plain@example.test');
  const leaving = await plainUser(svc, 'leaving@example.test');
  t.equal((await request(`${svc.url}/api/v1/auth/logout`, { method: 'POST', token: leaving.token })).status, 200);
  const seeded = await seedHomelab(svc.services);
  const eso = await login(svc.url, seeded);
  const renewed = await request(`${svc.url}/api/v1/auth/token/renew`, { method: 'POST', json: { accessToken: eso } });
  t.equal(renewed.status, 200);
  const revokedToken = await login(svc.url, seeded);
  t.equal((await request(`${svc.url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: revokedToken } })).status, 200);
  const other = await machine(svc, 'other', [[seeded.projectId, 'viewer']]);
  const live = { admin: admin.token, plain: plain.token, eso, renewed: renewed.body.accessToken as string, other: other.token };

  // The real tokens work: the refusals below are about the forgeries, not the routes.
  t.equal((await request(`${svc.url}${READ}`, { token: eso })).status, 200, "ESO's token reads");
  t.equal((await request(`${svc.url}/api/v1/users/me`, { token: admin.token })).status, 200, "the superadmin's session works");

  // Every row of every table.
  const sql = svc.services.store.sql;
  const tables = (await sql<{ name: string }[]>`select table_name as name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name`).map((r) => r.name);
  t.ok(tables.includes('identity_access_tokens') && tables.includes('user_sessions') && tables.includes('audit_log'), `tables: ${tables.join(', ')}`);
  const dump: Record<string, Record<string, unknown>[]> = {};
  for (const name of tables) dump[name] = await sql.unsafe(`select * from "${name}"`);

  // Every id-looking value (uuids anywhere, in any column or JSON; integer ids), and the
  // 32-byte values of the credential tables (the stored hashes).
  const ids = new Set<string>();
  const bytes32 = new Set<string>();
  const walk = (v: unknown): void => {
    if (typeof v === 'string') for (const m of v.matchAll(UUID)) ids.add(m[0].toLowerCase());
    else if (typeof v === 'number' || typeof v === 'bigint') ids.add(String(v));
    else if (Buffer.isBuffer(v) || v instanceof Uint8Array) walk(Buffer.from(v).toString('utf8'));
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v instanceof Date) return;
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(dump);
  for (const name of ['identity_access_tokens', 'user_sessions', 'identity_client_secrets']) {
    for (const row of dump[name]!) for (const v of Object.values(row)) if (Buffer.isBuffer(v) && v.length === 32) bytes32.add(v.toString('base64url'));
  }
  const tokenRows = dump.identity_access_tokens!;
  const sessionRows = dump.user_sessions!;
  t.ok(tokenRows.length >= 3 && sessionRows.length >= 3, 'tokens and sessions are on record');
  t.ok(tokenRows.every((r) => Buffer.isBuffer(r.secretHash) && r.secretHash.length === 32), 'every token row keeps a 32-byte hash');
  t.ok(bytes32.size >= tokenRows.length + sessionRows.length, 'the stored hashes are among the candidate secrets');
  const userIds = dump.users!.map((r) => r.id as string);
  const identityIds = dump.identities!.map((r) => r.id as string);
  const secretIds = [...dump.identity_client_secrets!.map((r) => r.id as string), ''];

  // Secret parts a forger can try: none (the layout before secret parts), a random one,
  // and every 32-byte value of the dump (the stored hashes among them) as it is.
  const secrets: (string | undefined)[] = [undefined, newTokenSecret().secret, ...bytes32];
  let forged = 0;
  /** `all`: use, renew and revoke (else the use alone). */
  const refused = async (kind: string, token: string, label: string, all = true) => {
    forged++;
    const answers = await Promise.all(
      kind === 'session'
        ? [request(`${svc.url}/api/v1/users/me`, { token }), ...(all ? [request(`${svc.url}/api/v1/projects`, { token })] : [])]
        : [
            request(`${svc.url}${READ}`, { token }),
            ...(all
              ? [
                  request(`${svc.url}/api/v1/auth/token/renew`, { method: 'POST', json: { accessToken: token } }),
                  request(`${svc.url}/api/v1/auth/token/revoke`, { method: 'POST', json: { accessToken: token } }),
                ]
              : []),
          ],
    );
    const statuses = answers.map((a) => a.status);
    if (statuses.some((s) => s !== 401)) t.fail(`${label}: ${statuses.join(', ')}`);
  };
  const signIdentity = (c: Omit<IdentityTokenClaims, 'secret'> & { secret: string | undefined }) => identities.sign(c as IdentityTokenClaims);
  const signSession = (c: { userId: string; sessionId: string; secret: string | undefined; exp: number }) =>
    sessions.sign(c as { userId: string; sessionId: string; secret: string; exp: number });

  // 1. Each token row and session row in its real layout, with every candidate secret.
  for (const row of tokenRows) {
    const method = row.authMethod === 'universal-auth' ? {} : { authMethod: row.authMethod as 'jwt-auth' | 'oidc-auth' };
    for (const secret of secrets) {
      const token = await signIdentity({ identityId: row.identityId as string, clientSecretId: (row.clientSecretId as string | null) ?? '', tokenId: row.id as string, secret, exp, ...method });
      await refused('identity', token, `access token row ${row.id as string} with secret ${secret}`);
    }
  }
  for (const row of sessionRows) {
    for (const secret of secrets) {
      await refused('session', await signSession({ userId: row.userId as string, sessionId: row.id as string, secret, exp }), `session row ${row.id as string} with secret ${secret}`);
    }
  }
  // 2. Every id of the dump as the token id, for every identity / client secret, and as the
  //    session id for every person (a random secret part, or none).
  for (const id of ids) {
    const secret = newTokenSecret().secret;
    const tries: Promise<void>[] = [];
    for (const identityId of identityIds) {
      for (const clientSecretId of secretIds) {
        tries.push(signIdentity({ identityId, clientSecretId, tokenId: id, secret, exp }).then((tk) => refused('identity', tk, `token id ${id} for ${identityId}/${clientSecretId}`, false)));
      }
    }
    for (const userId of userIds) tries.push(signSession({ userId, sessionId: id, secret, exp }).then((tk) => refused('session', tk, `session id ${id} for ${userId}`, false)));
    await Promise.all(tries);
  }
  t.ok(forged > 300, `${forged} forged tokens, each refused`);

  // The real tokens still work: the revokes above reached none of them.
  t.equal((await request(`${svc.url}${READ}`, { token: eso })).status, 200, "ESO's token still reads");
  t.equal((await request(`${svc.url}/api/v1/users/me`, { token: admin.token })).status, 200, "the superadmin's session still works");

  // A token of the layout before secret parts (none in it), and a row of that time (no
  // hash kept): both refused after the upgrade, so their holders log in again.
  const esoClaims = await identities.verify(eso);
  t.equal((await request(`${svc.url}${READ}`, { token: await signIdentity({ ...esoClaims, secret: undefined }) })).status, 401, 'a token without a secret part');
  const before = await login(svc.url, seeded);
  await sql`update identity_access_tokens set secret_hash = null where id = ${(await identities.verify(before)).tokenId}`;
  svc.services.caches.accessTokens.clear();
  t.equal((await request(`${svc.url}${READ}`, { token: before })).status, 401, 'a row issued before secret parts');
  t.equal((await request(`${svc.url}${READ}`, { token: eso })).status, 200, "ESO's token still reads");

  // No live token, nor its secret part, in the audit trail, the database or the log.
  const everything = JSON.stringify({ dump: Object.fromEntries(Object.entries(dump).map(([k, rows]) => [k, rows.map((r) => Object.values(r).map(String))])), logLines });
  for (const [name, token] of Object.entries(live)) {
    const secret = name === 'admin' || name === 'plain' ? (await sessions.verify(token)).secret : (await identities.verify(token)).secret;
    t.notOk(everything.includes(token), `${name}: the token is nowhere in the database or the log`);
    t.notOk(everything.includes(secret), `${name}: its secret part is nowhere in the database or the log`);
  }
});
