// The review's scenario at reduced scale (issue 31, point 7): many large folders listed
// one after another. The caches hold at most their byte bounds (CACHE_MAX_BYTES'
// shares, RENDER_CACHE_MAX_BYTES per crypto worker), as their metrics report; the
// process's RSS before and after is printed for the record, never asserted.
// CACHE_SCENARIO_MAX_BYTES (this test's own knob) replaces the small bound, e.g. with
// 4294967296 to see what a bound by entries alone would hold.
import t from 'tap';
import { signupAdmin } from '../helpers/admin.js';
import { freshDatabase } from '../helpers/db.js';
import { request } from '../helpers/http.js';
import { runMain } from '../helpers/process.js';
import { testKeys } from '../helpers/service.js';

t.setTimeout(600_000);

const FOLDERS = Number(process.env.CACHE_SCENARIO_FOLDERS ?? 20);
const SECRETS = Number(process.env.CACHE_SCENARIO_SECRETS ?? 500);
const MAX_BYTES = process.env.CACHE_SCENARIO_MAX_BYTES ?? String(1024 * 1024);
const RENDER_MAX_BYTES = process.env.CACHE_SCENARIO_RENDER_MAX_BYTES ?? String(1024 * 1024);

function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

t.test(`listing ${FOLDERS} folders of ${SECRETS} secrets: the caches stay within their byte bounds`, async (t) => {
  const env = {
    NODE_ENV: 'test',
    ...testKeys(),
    DATABASE_URL: await freshDatabase(t),
    DB_WAIT_SECONDS: '10',
    METRICS_PORT: '0',
    CACHE_MAX_BYTES: MAX_BYTES,
    RENDER_CACHE_MAX_BYTES: RENDER_MAX_BYTES,
  };
  const svc = runMain(env);
  t.teardown(() => svc.stop('SIGKILL'));
  const url = await svc.listening;
  const metricsPort = (await svc.output(/metrics on http:\/\/[\d.]+:(\d+)\/metrics/))[1]!;
  const scrape = async () => parse(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());

  const admin = await signupAdmin(url);
  const project = await request(`${url}/api/v1/projects`, { method: 'POST', token: admin.token, json: { projectName: 'big' } });
  t.equal(project.status, 200);
  const workspaceId = project.body.project.id as string;
  for (let f = 0; f < FOLDERS; f++) {
    const folder = await request(`${url}/api/v1/folders`, { method: 'POST', token: admin.token, json: { name: `f${f}`, workspaceId, environment: 'prod', path: '/' } });
    t.equal(folder.status, 200, `folder ${f}`);
    for (let from = 0; from < SECRETS; from += 500) {
      const secrets = Array.from({ length: Math.min(500, SECRETS - from) }, (_, i) => ({ secretKey: `KEY_${from + i}`, secretValue: `value-${f}-${from + i}-${'v'.repeat(32)}` }));
      const made = await request(`${url}/api/v3/secrets/batch/raw`, { method: 'POST', token: admin.token, json: { workspaceId, environment: 'prod', secretPath: `/f${f}`, secrets } });
      if (made.status !== 200) t.fail(`batch ${f}/${from}: ${made.status}`);
    }
  }

  const before = await scrape();
  for (let round = 0; round < 2; round++) {
    for (let f = 0; f < FOLDERS; f++) {
      const r = await fetch(`${url}/api/v3/secrets/raw?workspaceId=${workspaceId}&environment=prod&secretPath=/f${f}`, { headers: { authorization: `Bearer ${admin.token}` } });
      const body = (await r.json()) as { secrets: unknown[] };
      if (r.status !== 200 || body.secrets.length !== SECRETS) t.fail(`list f${f}: ${r.status}`);
    }
  }
  const after = await scrape();

  const folders = after.get('vaultstandalone_cache_bytes{cache="folders"}');
  const foldersMax = after.get('vaultstandalone_cache_max_bytes{cache="folders"}');
  const rendered = after.get('vaultstandalone_cache_bytes{cache="rendered"}');
  t.ok(folders !== undefined && foldersMax !== undefined, 'the folder cache reports its bytes and bound');
  t.equal(foldersMax, Math.floor(Number(MAX_BYTES) * 0.6), "the folder cache's bound is its share of CACHE_MAX_BYTES");
  t.ok(folders! > 0 && folders! <= foldersMax!, `folder snapshots held: ${folders} bytes of at most ${foldersMax}`);
  for (const [series, v] of after) {
    const m = /^vaultstandalone_cache_bytes\{cache="(\w+)"\}$/.exec(series);
    if (m && m[1] !== 'rendered') t.ok(v <= after.get(`vaultstandalone_cache_max_bytes{cache="${m[1]}"}`)!, `${m[1]}: ${v} bytes within its bound`);
  }
  t.ok(rendered !== undefined && rendered > 0 && rendered <= Number(RENDER_MAX_BYTES), `rendered answers held: ${rendered} bytes of at most ${RENDER_MAX_BYTES} (one crypto worker)`);
  const entries = after.get('vaultstandalone_cache_entries{cache="folders"}')!;
  if (process.env.CACHE_SCENARIO_MAX_BYTES === undefined) t.ok(entries < FOLDERS, `the byte bound evicted folders: ${entries} of ${FOLDERS} held`);
  const mb = (m: Map<string, number>) => ((m.get('process_resident_memory_bytes') ?? 0) / 1048576).toFixed(0);
  t.comment(`RSS ${mb(before)} MB before listing, ${mb(after)} MB after (CACHE_MAX_BYTES=${MAX_BYTES}, RENDER_CACHE_MAX_BYTES=${RENDER_MAX_BYTES}); folders held ${entries}, ${folders} bytes`);
});
