// The ceiling: a bare uWS app (same hash-checked native binary as the service) that
// answers the hot path with fixed bytes. Nothing is parsed, authenticated, looked up
// or decrypted: it measures what the HTTP layer alone costs on this machine.
import { uws } from '../server/http/uws.js';

export interface Ceiling {
  port: number;
  url: string;
  close(): void;
}

export function startCeiling(path: string, body: Buffer, contentType: string): Promise<Ceiling> {
  const app = uws.App();
  // A copy the native side may keep a view of for the whole run.
  const bytes = new Uint8Array(body).buffer;
  app.get(path, (res) => {
    res.cork(() => {
      res.writeStatus('200 OK').writeHeader('Content-Type', contentType).end(bytes);
    });
  });
  app.any('/*', (res) => {
    res.cork(() => {
      res.writeStatus('404 Not Found').end();
    });
  });
  return new Promise((resolve, reject) => {
    app.listen('127.0.0.1', 0, (token) => {
      if (!token) return reject(new Error('ceiling: uWS could not listen on 127.0.0.1'));
      const port = uws.us_socket_local_port(token as unknown as Parameters<typeof uws.us_socket_local_port>[0]);
      resolve({
        port,
        url: `http://127.0.0.1:${port}`,
        close: () => uws.us_listen_socket_close(token),
      });
    });
  });
}
