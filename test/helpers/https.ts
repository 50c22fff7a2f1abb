// A verifying HTTPS client (node:https, one fresh connection per request, so a reloaded
// certificate is seen) that reports the server certificate's serial.
import { request } from 'node:https';
import { readFileSync } from 'node:fs';
import type { TLSSocket } from 'node:tls';

export interface HttpsAnswer {
  status: number;
  body: string;
  /** The serial of the certificate the server presented. */
  serial: string;
  protocol: string | null;
}

export function httpsRequest(
  url: string,
  opts: { caFile: string; method?: string; headers?: Record<string, string>; body?: string; servername?: string },
): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: opts.method ?? 'GET', headers: opts.headers, ca: readFileSync(opts.caFile), agent: false, servername: opts.servername },
      (res) => {
        const socket = res.socket as TLSSocket;
        const serial = socket.getPeerCertificate().serialNumber;
        const protocol = socket.getProtocol();
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body, serial, protocol }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}
