// A plain HTTP forwarder in front of the service that records each request a real client
// sends (method, path with query, headers, body), so a test can assert the client's exact
// spelling as well as the answer it got. It forwards bytes unchanged.
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
  method: string;
  url: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

interface TapLike {
  teardown(fn: () => unknown): void;
}

export async function startRecordingProxy(t: TapLike, target: string): Promise<{ url: string; seen: Recorded[] }> {
  const to = new URL(target);
  const seen: Recorded[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const url = req.url ?? '/';
      const parsed = new URL(url, 'http://x');
      const entry: Recorded = { method: req.method ?? 'GET', url, path: parsed.pathname, query: parsed.searchParams, headers: req.headers, body: body.toString('utf8'), status: 0 };
      seen.push(entry);
      const upstream = httpRequest(
        { host: to.hostname, port: to.port, method: req.method, path: url, headers: { ...req.headers, host: to.host } },
        (up) => {
          entry.status = up.statusCode ?? 0;
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      upstream.on('error', () => {
        res.writeHead(502);
        res.end();
      });
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}
