// GET /api/docs/openapi.json: an OpenAPI 3.1 document generated from the route table,
// with every registered route in it; and the contract checker that test/helpers/http.ts
// applies to every answer the suite gets can fail.
import t from 'tap';
import { checkerFor } from '../../helpers/contract.js';
import { request } from '../../helpers/http.js';
import { startTestService, testEnv } from '../../helpers/service.js';

t.test('the document names every route, and answers are checked against it', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  const r = await request(`${svc.url}/api/docs/openapi.json`);
  t.equal(r.status, 200);
  t.equal(r.contentType, 'application/json; charset=utf-8');
  const doc = r.body;
  t.equal(doc.openapi, '3.1.0');
  t.match(doc.info, { title: 'vault-standalone', version: String });

  const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
    Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
  );
  const declared = svc.routes.map((x) => `${x.method} ${x.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
  t.same([...documented].sort(), [...declared].sort(), 'exactly the registered routes');
  t.ok(declared.length >= 60, `${declared.length} routes`);
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(ops)) {
      const what = `${method} ${path}`;
      t.ok(op.summary, `${what}: a summary`);
      t.ok(op.responses?.['200'] && op.responses.default, `${what}: its answer and the error shape`);
      if (!path.startsWith('/api/docs') && !path.startsWith('/api/health')) {
        t.ok(op.responses['200'].content, `${what}: the answer's schema`);
      }
      for (const name of [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])) {
        t.ok(op.parameters?.some((p: any) => p.in === 'path' && p.name === name && p.required), `${what}: path parameter ${name}`);
      }
    }
  }
  const list = doc.paths['/api/v3/secrets/raw'].get;
  t.ok(list.parameters.some((p: any) => p.name === 'environment' && p.in === 'query' && p.required), 'query parameters from the zod schema');
  const secret = list.responses['200'].content['application/json'].schema.properties.secrets.items;
  t.match(secret.properties, { version: { type: 'integer' }, secretValueHidden: { type: 'boolean' }, tags: { type: 'array' } }, "ESO's field types");

  const checker = checkerFor(doc);
  const withAnswer = Object.values(doc.paths).flatMap((methods: any) => Object.values(methods)).filter((op: any) => op.responses['200']?.content?.['application/json']?.schema).length;
  t.equal(checker.compileAll(), withAnswer, 'every declared answer schema compiles (the suite compiles them on first use)');
  const url = new URL(`${svc.url}/api/v3/secrets/raw/KEY`);
  const good = { id: 'i', _id: 'i', workspace: 'w', environment: 'prod', version: 1, type: 'shared', secretKey: 'KEY', secretValue: 'v', secretComment: '', secretPath: '/', secretValueHidden: false, skipMultilineEncoding: false, tags: [], secretMetadata: [], createdAt: 'x', updatedAt: 'x' };
  t.doesNotThrow(() => checker.check('GET', url, 200, { secret: good }), 'a well-formed secret passes');
  t.throws(() => checker.check('GET', url, 200, { secret: { ...good, version: '1' } }), /does not match the OpenAPI document/, 'a version as a string fails');
  t.throws(() => checker.check('GET', url, 200, { secret: { ...good, tags: undefined } }), 'a missing field fails');
  t.throws(() => checker.check('GET', url, 404, { message: 'not found' }), 'an error without the contract shape fails');
  t.doesNotThrow(() => checker.check('GET', url, 404, { reqId: 'req-1', statusCode: 404, message: 'm', error: 'NotFound' }));
});
