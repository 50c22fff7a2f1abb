// The route wrapper's per-request origin: the client address is worked out once, when
// first asked, and the getter lives on a shared prototype. An object literal with a getter
// made per request gets a hidden class of its own in V8's old generation, which kept every
// request's objects alive until a full collection (bench/README.md, 2026-11-26).
import t from 'tap';
import { createApi } from '../../../server/routes/api.js';
import { parseIpRange } from '../../../server/http/clientAddress.js';
import type { Handler, HttpRequest, Router } from '../../../server/http/types.js';

t.test('origin.ip: asked lazily, once, through TRUSTED_PROXIES; the getter is on a shared prototype', async (t) => {
  const handlers = new Map<string, Handler>();
  const router = Object.fromEntries(
    ['get', 'post', 'patch', 'put', 'delete'].map((m) => [m, (path: string, h: Handler) => handlers.set(`${m} ${path}`, h)]),
  ) as unknown as Router;
  const api = createApi(router, { actor: async () => t.fail('no actor for caller none') as never }, { trustedProxies: [parseIpRange('10.0.0.0/8')!] });
  const origins: Array<{ ip?: string | null }> = [];
  api.get('/x', { caller: 'none', summary: 'test' }, ({ origin }) => {
    origins.push(origin);
    return { body: {} };
  });

  let reads = 0;
  const request = (address: string, forwardedFor?: string): HttpRequest =>
    ({
      reqId: 'r',
      method: 'GET',
      path: '/x',
      params: {},
      headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {},
      body: Buffer.alloc(0),
      query: new URLSearchParams(),
      rawQuery: '',
      get remoteAddress() {
        reads++;
        return address;
      },
    }) as unknown as HttpRequest;

  const handler = handlers.get('get /x')!;
  await handler(request('203.0.113.7'));
  await handler(request('10.1.2.3', '198.51.100.9'));
  t.equal(reads, 0, 'nothing asked the address');
  t.equal(origins[0]!.ip, '203.0.113.7');
  t.equal(origins[0]!.ip, '203.0.113.7');
  t.equal(reads, 1, 'asked once, then kept');
  t.equal(origins[1]!.ip, '198.51.100.9', 'a trusted proxy names the client');

  t.equal(Object.getOwnPropertyDescriptor(origins[0]!, 'ip'), undefined, 'no own getter per request');
  t.equal(Object.getPrototypeOf(origins[0]), Object.getPrototypeOf(origins[1]), 'one prototype for every request');
  t.type(Object.getOwnPropertyDescriptor(Object.getPrototypeOf(origins[0]), 'ip')?.get, 'function', 'the getter is there');
});
