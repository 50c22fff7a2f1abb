// A sealed value is bound to its row: a value blob swapped between two rows in storage
// (SQL, around the service) must fail to open, over HTTP, rather than answer with the
// other secret's value; the answer and the log name the row and carry no value.
import t from 'tap';
import { startService } from '../../server/app.js';
import { parseConfig } from '../../server/config.js';
import { topics } from '../../server/domain/caches.js';
import type { Logger } from '../../server/services.js';
import { textLogger } from '../../server/log.js';
import { JSON_TYPE, request, type JsonResponse } from '../helpers/http.js';
import { BACKENDS, INVENTORY, login, seedHomelab, testEnv } from '../helpers/service.js';

for (const backend of BACKENDS) {
  t.test(`a value blob swapped between two rows in storage (${backend})`, async (t) => {
    const logged: string[] = [];
    const log: Logger = textLogger({ warn: (m) => logged.push(m), error: (m) => logged.push(m) });
    const env = await testEnv(t, backend);
    const running = await startService(parseConfig(env), log);
    t.teardown(() => running.close());
    const url = `http://127.0.0.1:${running.port}`;
    const s = running.services;
    const seeded = await seedHomelab(s);
    const token = await login(url, seeded);

    const sql = s.store.sql;
    const rows = await sql`select s.id, s.key, f.environment_id from secrets s join folders f on f.id = s.folder_id
      where s.key in ('LLM_API_KEY', 'ROUTER_API_KEY') order by s.key`;
    t.equal(rows.length, 2);
    const [llm, router] = rows as unknown as { id: string; key: string; environmentId: string }[];
    await sql`update secrets set value_blob = case id
        when ${llm!.id}::uuid then (select value_blob from secrets where id = ${router!.id}::uuid)
        else (select value_blob from secrets where id = ${llm!.id}::uuid) end
      where id in (${llm!.id}::uuid, ${router!.id}::uuid)`;
    // As a write would (this one went around the service): the folder is read afresh.
    await s.bus.publish(topics.environment, llm!.environmentId);

    const values = [INVENTORY.LLM_API_KEY!, INVENTORY.ROUTER_API_KEY!];
    const refused = async (r: JsonResponse, what: string) => {
      t.equal(r.status, 500, `${what}: 500, the service's own data is wrong`);
      t.equal(r.contentType, JSON_TYPE);
      t.equal(r.body.error, 'DecryptionFailed', what);
      t.match(r.body.message, /^Stored secret [0-9a-f-]{36} could not be decrypted/, what);
      const text = JSON.stringify(r.body);
      for (const v of values) t.notOk(text.includes(v), `${what}: no value in the answer`);
      t.notOk(text.includes(INVENTORY.GATEWAY_TOKEN!), `${what}: nor any other value of the folder`);
    };

    const list = await request(`${url}/api/v3/secrets/raw?environment=prod&workspaceSlug=homelab&secretPath=/`, { token });
    await refused(list, 'list');
    // The list is rendered in key order, comments included: the first blob that fails is LLM_API_KEY's.
    t.match(list.body.message, llm!.id, 'the list names the first row that failed');
    await refused(await request(`${url}/api/v3/secrets/raw/LLM_API_KEY?environment=prod&workspaceSlug=homelab`, { token }), 'LLM_API_KEY');
    await refused(await request(`${url}/api/v3/secrets/raw/ROUTER_API_KEY?environment=prod&workspaceSlug=homelab`, { token }), 'ROUTER_API_KEY');
    const single = await request(`${url}/api/v3/secrets/raw/LLM_API_KEY?environment=prod&workspaceSlug=homelab`, { token });
    t.match(single.body.message, llm!.id, 'the single read names the row that failed');

    const untouched = await request(`${url}/api/v3/secrets/raw/GATEWAY_TOKEN?environment=prod&workspaceSlug=homelab`, { token });
    t.equal(untouched.status, 200, 'other rows still read');
    t.equal(untouched.body.secret.secretValue, INVENTORY.GATEWAY_TOKEN);

    const log5xx = logged.filter((l) => l.includes('request failed'));
    t.ok(log5xx.length >= 3, 'each failure is logged');
    t.ok(log5xx.some((l) => l.includes(llm!.id)), 'the log names the row');
    for (const v of [...values, INVENTORY.GATEWAY_TOKEN!]) t.notOk(logged.join('\n').includes(v), 'no value in the log');
  });
}
