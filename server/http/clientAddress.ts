// The address a request came from, for the request log, the audit trail and metrics.
// Today: the TCP peer's address as uWS reports it. Behind a reverse proxy that is the
// proxy; honouring X-Forwarded-For from a configured set of trusted proxies belongs
// here, in this one function, so every consumer gets the same answer.
import type { HttpRequest } from './types.js';

export function clientAddress(req: Pick<HttpRequest, 'remoteAddress' | 'headers'>): string {
  return req.remoteAddress;
}
