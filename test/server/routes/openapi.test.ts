// GET /api/docs/openapi.json: an OpenAPI 3.1 document generated from the route table,
// with every registered route in it; and the contract checker that test/helpers/http.ts
// applies to every answer the suite gets can fail.
import t from 'tap';
import { operationId, resourceTag } from '../../../server/routes/openapi.js';
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
  // What `redocly lint` (recommended rules) asks of an operation, checked here (the CLI
  // is not installed): unique camelCase operationIds, resource tags, documented 4xx and
  // 503 answers, every parameter described.
  const ops = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, m]) => Object.entries(m).map(([method, op]) => ({ path, method, op })));
  const ids = ops.map((o) => o.op.operationId as string);
  t.equal(new Set(ids).size, ids.length, 'operationIds are unique');
  const notCamel = ids.filter((id) => !/^[a-z]+(?:[A-Z0-9][a-z0-9]*)*$/.test(id));
  t.same(notCamel, [], 'every operationId is camelCase');
  t.equal(doc.paths['/api/v3/secrets/raw/{secretName}'].get.operationId, 'getV3SecretsRawBySecretName');
  t.same(doc.paths['/api/v3/secrets/raw/{secretName}'].get.tags, ['secrets']);
  t.same(doc.paths['/api/v1/auth/universal-auth/login'].post.tags, ['universal-auth']);
  const undescribed = ops.flatMap((o) => ((o.op.parameters ?? []) as any[]).filter((p) => typeof p.description !== 'string' || p.description === '').map((p) => `${o.method} ${o.path} ${p.name}`));
  t.same(undescribed, [], 'every parameter has a description');
  for (const { path, method, op } of ops) {
    const codes = Object.keys(op.responses);
    t.ok(codes.includes('503'), `${method} ${path}: 503 documented`);
    // An open route without input (status, health, this document, public config) can only fail as a whole (503).
    const open = op.security.length === 0 && !op.parameters && !op.requestBody;
    t.ok(open || codes.some((c) => /^4\d\d$/.test(c)), `${method} ${path}: its 4xx answers documented`);
    for (const c of codes.filter((c) => c !== '200' && c !== 'default')) {
      t.ok(doc.components.responses[op.responses[c].$ref.split('/').pop()], `${method} ${path}: ${c} resolves`);
    }
  }
  const login = doc.paths['/api/v3/auth/login'].post;
  t.equal(login.requestBody.required, true, 'the login body is required');
  t.match(Object.keys(login.responses), ['200', '401', '404', '422', '429', '503', 'default']);
  t.ok(doc.paths['/api/v3/secrets/raw'].get.responses['403'], 'an authenticated route documents 403');

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

t.test('operationIds and tags from method and path', async (t) => {
  t.equal(operationId('GET', '/api/v3/secrets/raw'), 'getV3SecretsRaw');
  t.equal(operationId('POST', '/api/v1/auth/universal-auth/identities/:identityId/client-secrets'), 'postV1AuthUniversalAuthIdentitiesByIdentityIdClientSecrets');
  t.equal(operationId('DELETE', '/api/v2/folders/:folderId'), 'deleteV2FoldersByFolderId');
  t.equal(resourceTag('/api/v1/organization/audit-logs'), 'audit-logs');
  t.equal(resourceTag('/api/v2/folders/:folderId'), 'folders');
  t.equal(resourceTag('/api/status'), 'status');
});
