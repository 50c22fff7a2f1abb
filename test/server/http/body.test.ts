// parseJsonBody: JSON, form-urlencoded, empty, malformed, prototype keys, other types.
import t from 'tap';
import { AppError } from '../../../server/errors.js';
import { MAX_JSON_DEPTH, parseJsonBody } from '../../../server/http/body.js';
import type { HttpRequest } from '../../../server/http/types.js';

function req(body: string | Buffer, contentType?: string): HttpRequest {
  const headers: Record<string, string> = {};
  if (contentType !== undefined) headers['content-type'] = contentType;
  return {
    reqId: 'req-test',
    method: 'POST',
    path: '/',
    params: {},
    query: new URLSearchParams(),
    headers,
    body: Buffer.isBuffer(body) ? body : Buffer.from(body),
    remoteAddress: '127.0.0.1',
  };
}

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof AppError ? err.code : `not an AppError: ${String(err)}`;
  }
  return undefined;
}

t.test('empty body is {} whatever the type', async (t) => {
  t.same(parseJsonBody(req('')), {});
  t.same(parseJsonBody(req('', 'application/json')), {});
  t.same(parseJsonBody(req('', 'text/plain')), {});
});

t.test('JSON', async (t) => {
  t.same(parseJsonBody(req('{"a":1,"b":[true,null]}', 'application/json')), { a: 1, b: [true, null] });
  t.same(parseJsonBody(req('{"a":"é"}', 'Application/JSON; charset=UTF-8')), { a: 'é' });
  t.same(parseJsonBody(req('{"a":1}', 'application/vnd.api+json')), { a: 1 });
  t.same(parseJsonBody(req('\ufeff{"a":1}', 'application/json')), { a: 1 }, 'BOM tolerated');
  t.same(parseJsonBody(req('{"a":1}')), { a: 1 }, 'missing content-type, JSON body');
  t.same(parseJsonBody(req('[1,2]', 'application/json')), [1, 2]);
  t.equal(parseJsonBody(req('"s"', 'application/json')), 's');
});

t.test('malformed JSON: 400', async (t) => {
  t.equal(code(() => parseJsonBody(req('{"clientId":', 'application/json'))), 'BAD_REQUEST');
  t.equal(code(() => parseJsonBody(req('not json'))), 'BAD_REQUEST');
  t.equal(code(() => parseJsonBody(req(Buffer.from([0xff, 0xfe]), 'application/json'))), 'BAD_REQUEST');
  try {
    parseJsonBody(req('{', 'application/json'));
  } catch (err) {
    t.equal((err as Error).message, 'Malformed JSON body');
  }
});

t.test('nesting is limited', async (t) => {
  const ok = '['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH);
  t.same(code(() => parseJsonBody(req(ok, 'application/json'))), undefined);
  const deep = '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1);
  t.equal(code(() => parseJsonBody(req(deep, 'application/json'))), 'BAD_REQUEST');
  const veryDeep = '{"a":'.repeat(100000) + '1' + '}'.repeat(100000);
  t.equal(code(() => parseJsonBody(req(veryDeep, 'application/json'))), 'BAD_REQUEST');
});

t.test('prototype keys are dropped and pollute nothing', async (t) => {
  const parsed = parseJsonBody(
    req('{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":2}},"nested":[{"\\u005f_proto__":{"polluted":3}}],"ok":1}', 'application/json'),
  ) as Record<string, any>;
  t.same(Object.keys(parsed).sort(), ['nested', 'ok']);
  t.notOk(Object.hasOwn(parsed.nested[0], '__proto__'));
  const merged = Object.assign({}, parsed, parsed.nested[0]);
  t.equal(merged.polluted, undefined);
  t.equal(({} as any).polluted, undefined);
  t.equal(Object.getPrototypeOf(parsed), Object.prototype);
  const keepsPlainConstructor = parseJsonBody(req('{"constructor":"x"}', 'application/json')) as Record<string, unknown>;
  t.equal(keepsPlainConstructor.constructor, 'x', 'a string "constructor" field is harmless and kept');
});

t.test('form-urlencoded', async (t) => {
  const parsed = parseJsonBody(
    req('clientId=abc&clientSecret=a%2Bb+c&clientId=last&__proto__=x&constructor=y', 'application/x-www-form-urlencoded; charset=utf-8'),
  ) as Record<string, string>;
  t.equal(parsed.clientId, 'last', 'last wins');
  t.equal(parsed.clientSecret, 'a+b c');
  t.equal(Object.getPrototypeOf(parsed), null);
  t.equal(parsed['__proto__'], 'x', 'an ordinary field on a null-prototype object');
  t.equal(({} as any).x, undefined);
  t.same({ ...parsed }, { clientId: 'last', clientSecret: 'a+b c', ['__proto__']: 'x', constructor: 'y' });
});

t.test('other content types: 415', async (t) => {
  t.equal(code(() => parseJsonBody(req('a', 'text/plain'))), 'UNSUPPORTED_MEDIA_TYPE');
  t.equal(code(() => parseJsonBody(req('--b\r\n', 'multipart/form-data; boundary=b'))), 'UNSUPPORTED_MEDIA_TYPE');
  t.equal(code(() => parseJsonBody(req('{}', 'application/xml'))), 'UNSUPPORTED_MEDIA_TYPE');
});
