// Small fetch wrappers that keep status, content type and parsed JSON together. Every
// JSON answer of the service's API is checked against its OpenAPI document on the way
// (contract.ts): a test whose answer drifts from the document fails.
import { contractOf } from './contract.js';
export interface JsonResponse<T = any> {
  status: number;
  contentType: string | null;
  headers: Headers;
  body: T;
}

export async function request<T = any>(url: string, init: RequestInit & { token?: string; json?: unknown } = {}): Promise<JsonResponse<T>> {
  const headers = new Headers(init.headers);
  if (init.token) headers.set('authorization', `Bearer ${init.token}`);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set('content-type', 'application/json');
    body = JSON.stringify(init.json);
  }
  const res = await fetch(url, { ...init, headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = text;
  }
  const where = new URL(url);
  const method = (init.method ?? 'GET').toUpperCase();
  if (where.pathname.startsWith('/api/') && method !== 'HEAD' && res.headers.get('content-type')?.startsWith('application/json')) {
    (await contractOf(where.origin))?.check(method, where, res.status, parsed);
  }
  return { status: res.status, contentType: res.headers.get('content-type'), headers: res.headers, body: parsed as T };
}

export const JSON_TYPE = 'application/json; charset=utf-8';

/** ESO's list query, exactly as the issue quotes it. */
export const ESO_LIST_QUERY =
  'environment=prod&expandSecretReferences=true&include_imports=false&recursive=false&secretPath=%2F&workspaceId=&workspaceSlug=homelab';
