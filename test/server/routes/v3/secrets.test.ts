// The operator's read routes: strict query parsing (version), and secret names that
// cannot exist refused before they are looked up (and echoed).
import t from 'tap';
import { SYSTEM } from '../../../../server/domain/access.js';
import { secretRaw } from '../../../../server/routes/shape.js';
import { ESO_LIST_QUERY, JSON_TYPE, request } from '../../../helpers/http.js';
import { INVENTORY, login, seedHomelab, startTestService, testEnv } from '../../../helpers/service.js';

t.test('single read: version and secret name are parsed strictly', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const seeded = await seedHomelab(svc.services);
  const token = await login(svc.url, seeded);
  const one = (name: string, query: string) =>
    request(`${svc.url}/api/v3/secrets/raw/${name}?environment=prod&workspaceSlug=homelab&${query}`, { token });

  t.test('version: decimal digits only', async (t) => {
    const ok = await one('GATEWAY_TOKEN', 'version=1');
    t.equal(ok.status, 200);
    t.equal(ok.body.secret.secretValue, INVENTORY.GATEWAY_TOKEN);
    for (const v of ['0x1', '1e0', '1.0', '+1', '%201', '-1', '0', '2147483648', 'one']) {
      const r = await one('GATEWAY_TOKEN', `version=${v}`);
      t.equal(r.status, 422, `version=${v}`);
      t.equal(r.contentType, JSON_TYPE);
      t.equal(r.body.error, 'ValidationFailure', `version=${v}`);
      t.match(r.body.message, /^version: version must be/, `version=${v}`);
    }
  });

  t.test('a secret name too long or with control characters: 422, not echoed', async (t) => {
    for (const name of ['A'.repeat(256), 'A%00B', 'A%1B%5B31mB', 'A%7FB']) {
      const r = await one(name, '');
      t.equal(r.status, 422, name.slice(0, 20));
      t.equal(r.body.error, 'ValidationFailure');
      t.notMatch(r.body.message, /AAAA|A\u0000B|\u001b|\u007f/, 'the name is not in the message');
    }
    const longest = await one('A'.repeat(255), '');
    t.equal(longest.status, 404, 'a name of 255 characters is looked up');
  });
});

t.test('tagSlugs on the list is a filter, never ignored: no secret carries a tag, so a filter matches none', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const seeded = await seedHomelab(svc.services);
  const token = await login(svc.url, seeded);
  const lists = {
    v3: (extra: string) => request(`${svc.url}/api/v3/secrets/raw?environment=prod&workspaceSlug=homelab&secretPath=%2F${extra}`, { token }),
    v4: (extra: string) => request(`${svc.url}/api/v4/secrets?environment=prod&projectId=${seeded.projectId}&secretPath=%2F${extra}`, { token }),
  };
  for (const [version, list] of Object.entries(lists)) {
    const all = await list('');
    t.equal(all.status, 200, `${version}: no filter`);
    t.equal(all.body.secrets.length, Object.keys(INVENTORY).length, `${version}: every secret without a filter`);
    const empty = await list('&tagSlugs=');
    t.equal(empty.body.secrets.length, Object.keys(INVENTORY).length, `${version}: an empty filter is no filter`);
    for (const slugs of ['prod', 'a,b', ' db ']) {
      const r = await list(`&tagSlugs=${encodeURIComponent(slugs)}`);
      t.equal(r.status, 200, `${version} tagSlugs=${slugs}`);
      t.same(r.body.secrets, [], `${version} tagSlugs=${slugs}: nothing carries that tag`);
    }
    const hidden = await request(`${svc.url}/api/v3/secrets/raw?environment=nope&workspaceSlug=homelab&tagSlugs=prod`, { token });
    t.equal(hidden.status, 404, 'the scope is still checked with a filter');
  }
});

t.test('the list answer rendered by the crypto worker: exactly the bytes of the shaped views, and never stale on another replica', async (t) => {
  const env = await testEnv(t, 'postgres+redis');
  const A = await startTestService(t, env);
  const B = await startTestService(t, env);
  const seeded = await seedHomelab(A.services);
  const project = { id: seeded.projectId };
  await A.services.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/', key: 'WITH_COMMENT', value: 'v "q" \u00e9', comment: 'a comment \u2028' });
  await A.services.secrets.create(SYSTEM, { project, environment: 'prod', secretPath: '/', key: 'REFERS', value: 'pre-${GATEWAY_TOKEN}' });
  const token = await login(A.url, seeded);
  const listUrl = (svc: { url: string }, query: string) => `${svc.url}/api/v3/secrets/raw?environment=prod&workspaceSlug=homelab&secretPath=%2F${query}`;
  const raw = async (url: string) => {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    t.equal(res.status, 200, url);
    t.equal(res.headers.get('content-type'), JSON_TYPE);
    return Buffer.from(await res.arrayBuffer()).toString('utf8');
  };
  /** What the answer was before it was rendered in the worker: the views, shaped and stringified here. */
  const shaped = async (expand: boolean) => {
    const actor = await A.services.machineAuth.authenticate(`Bearer ${token}`, { ip: '127.0.0.1' });
    const views = await A.services.secrets.list(actor, { project, environment: 'prod', secretPath: '/', expandSecretReferences: expand });
    return JSON.stringify({ secrets: views.map(secretRaw), imports: [] });
  };

  await t.test('bytes: without expansion, rendered (a reference stays as written)', async (t) => {
    for (let i = 0; i < 2; i++) t.equal(await raw(listUrl(B, '&expandSecretReferences=false')), await shaped(false), `read ${i + 1} (the second from the worker's cache)`);
  });
  await t.test('bytes: with expansion and a reference in the folder, the values are expanded', async (t) => {
    const body = await raw(listUrl(B, '&expandSecretReferences=true'));
    t.equal(body, await shaped(true));
    t.ok(body.includes(`pre-${INVENTORY.GATEWAY_TOKEN}`), 'the reference was expanded');
  });
  await t.test('bytes: HEAD answers the headers of the rendered GET', async (t) => {
    const res = await fetch(listUrl(B, ''), { method: 'HEAD', headers: { authorization: `Bearer ${token}` } });
    t.equal(res.status, 200);
    t.equal(Number(res.headers.get('content-length')), Buffer.byteLength(await shaped(false)));
  });

  await t.test('a write acknowledged on A is in the next read on B (the worker-side bytes of B are not reused)', async (t) => {
    // No reference left: the operator's read (expandSecretReferences=true) is rendered too.
    await A.services.secrets.remove(SYSTEM, { project, environment: 'prod', secretPath: '/', key: 'REFERS' });
    const eso = listUrl(B, '&expandSecretReferences=true&include_imports=false&recursive=false&workspaceId=');
    const value = (body: string, key: string) => (JSON.parse(body) as { secrets: { secretKey: string; secretValue: string }[] }).secrets.find((s) => s.secretKey === key)?.secretValue;
    for (let i = 0; i < 3; i++) t.equal(value(await raw(eso), 'LLM_API_KEY'), INVENTORY.LLM_API_KEY, `B warm, read ${i + 1}`);
    for (const next of ['sk-llm-rotated-1', 'sk-llm-rotated-2']) {
      const res = await request(`${A.url}/api/v3/secrets/raw/LLM_API_KEY`, { method: 'PATCH', token, json: { workspaceId: seeded.projectId, environment: 'prod', secretPath: '/', secretValue: next } });
      t.equal(res.status, 200, 'the change is acknowledged by A');
      t.equal(value(await raw(eso), 'LLM_API_KEY'), next, `B's very next read has ${next}`);
      t.equal(await raw(eso), await shaped(true), 'and exactly the bytes of the shaped views');
    }
    const del = await request(`${A.url}/api/v3/secrets/raw/LLM_API_KEY`, { method: 'DELETE', token, json: { workspaceId: seeded.projectId, environment: 'prod', secretPath: '/' } });
    t.equal(del.status, 200);
    t.equal(value(await raw(eso), 'LLM_API_KEY'), undefined, "B's next read no longer has the deleted secret");
  });
});

// The list's arguments are made once per parsed query (made per request, they were half of
// what the main thread promoted to the old generation under the operator's read load).
t.test('list: one frozen set of arguments per query text, handed to the domain on every request', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const seeded = await seedHomelab(svc.services);
  const token = await login(svc.url, seeded);
  const secrets = svc.services.secrets;
  const seen: object[] = [];
  const real = secrets.listRendered.bind(secrets);
  secrets.listRendered = (actor, q, shaper, deps) => {
    seen.push(q);
    return real(actor, q, shaper, deps);
  };
  const list = (query: string) => request(`${svc.url}/api/v3/secrets/raw?${query}`, { token });
  const other = 'workspaceSlug=homelab&environment=prod&secretPath=%2F';
  const answers = [await list(ESO_LIST_QUERY), await list(ESO_LIST_QUERY), await list(other)];
  t.same(answers.map((a) => a.status), [200, 200, 200]);
  t.same(answers[1]!.body, answers[0]!.body, 'the same answer');
  t.equal(seen.length, 3);
  t.equal(seen[1], seen[0], 'the same query text: the same arguments');
  t.not(seen[2], seen[0], 'another query text: its own');
  t.ok(Object.isFrozen(seen[0]), 'frozen');
  t.throws(() => {
    (seen[0] as { secretPath: string }).secretPath = '/elsewhere';
  }, TypeError, 'so no request can change them for the next');
});
