// The operator's read routes: strict query parsing (version), and secret names that
// cannot exist refused before they are looked up (and echoed).
import t from 'tap';
import { JSON_TYPE, request } from '../../../helpers/http.js';
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
