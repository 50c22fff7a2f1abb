// The admin UI's production build (ui/dist), served on the API's port and origin.
// Every file is read into memory once at start; a request can only ever be answered
// with one of those files (or index.html for a client-side route), so no request path
// reaches the file system. /api/* keeps the JSON 404 of the HTTP front.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppError } from '../errors.js';
import type { Handler, HttpReply, HttpRequest } from './types.js';

/**
 * The route label of a request the UI's files answered (a file, or the app for a
 * client-side route): one label for the metrics and the request log instead of none, so
 * it can be told from a 404 and filtered out.
 */
export const UI_STATIC_ROUTE = 'ui-static';

/** ui/dist beside the package root: dist/server/http/static.js -> ../../../ui/dist (from source, ../../ui/dist). */
export const DEFAULT_UI_DIR = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '../../ui/dist/' : '../../../ui/dist/', import.meta.url));

/** The UI's policy: nothing inline, nothing from elsewhere. */
export const UI_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
};

export function contentTypeOf(file: string): string {
  return TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
}

interface StaticFile {
  body: Buffer;
  headers: Record<string, string>;
}

/** Largest UI build accepted into memory (a build is ~100 KiB; this only stops accidents). */
const MAX_TOTAL_BYTES = 64 * 1024 * 1024;

function walk(dir: string, root: string, out: Map<string, StaticFile>, budget: { left: number }): void {
  for (const name of readdirSync(dir).sort()) {
    if (name.startsWith('.')) continue;
    const full = join(dir, name);
    const st = statSync(full);
    if (st.isDirectory()) {
      walk(full, root, out, budget);
      continue;
    }
    if (!st.isFile()) continue;
    budget.left -= st.size;
    if (budget.left < 0) throw new Error(`UI build in ${root} is larger than ${MAX_TOTAL_BYTES} bytes`);
    const urlPath = `/${relative(root, full).split(sep).join('/')}`;
    // Vite names /assets/* by content hash: they never change, so browsers keep them.
    // Everything else (index.html above all) keeps the front's default `no-store`.
    const headers: Record<string, string> = { 'Content-Type': contentTypeOf(full), 'Content-Security-Policy': UI_CSP };
    if (urlPath.startsWith('/assets/')) headers['Cache-Control'] = 'public, max-age=31536000, immutable';
    out.set(urlPath, { body: readFileSync(full), headers });
  }
}

export interface StaticUi {
  /** URL paths served, e.g. `/index.html`, `/assets/index-abc.js`. */
  paths: string[];
  handler: Handler;
}

/**
 * Loads the UI build from `dir`. Returns undefined when there is no build (no
 * `index.html`): the service then runs without a UI and unknown paths stay JSON 404s.
 */
export function loadStaticUi(dir: string = DEFAULT_UI_DIR): StaticUi | undefined {
  if (!existsSync(join(dir, 'index.html'))) return undefined;
  const files = new Map<string, StaticFile>();
  walk(dir, dir, files, { left: MAX_TOTAL_BYTES });
  const index = files.get('/index.html')!;

  const handler: Handler = (req: HttpRequest): HttpReply => {
    const path = req.path;
    if (req.method !== 'GET' || path === '/api' || path.startsWith('/api/')) notFound(req);
    const clean = cleanPath(path);
    const file = files.get(clean) ?? (clean.endsWith('/') ? files.get(`${clean}index.html`) : undefined);
    if (file) {
      req.route = UI_STATIC_ROUTE;
      return { raw: true, body: file.body, headers: file.headers };
    }
    // Client-side routes: the app for navigations (they accept HTML), never for a
    // missing asset or a script's fetch.
    if (!clean.startsWith('/assets/') && acceptsHtml(req)) {
      req.route = UI_STATIC_ROUTE;
      return { raw: true, body: index.body, headers: index.headers };
    }
    notFound(req);
  };
  return { paths: [...files.keys()], handler };
}

function notFound(req: HttpRequest): never {
  throw new AppError('NOT_FOUND', `Route ${req.method}:${req.path} not found`);
}

function acceptsHtml(req: HttpRequest): boolean {
  const accept = req.headers.accept;
  return accept !== undefined && /(^|,)\s*text\/html\b/i.test(accept);
}

/**
 * The decoded path, or 400 for anything that tries to leave the build folder or that no
 * build file could be named: `..` / `.` segments (raw or percent-encoded), backslashes,
 * NUL, malformed escapes.
 */
export function cleanPath(raw: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    throw new AppError('BAD_REQUEST', 'Malformed percent-encoding in URL');
  }
  if (!decoded.startsWith('/') || decoded.includes('\\') || decoded.includes('\0') || decoded.includes('//')) {
    throw new AppError('BAD_REQUEST', 'Invalid path');
  }
  for (const segment of decoded.split('/')) {
    if (segment === '..' || segment === '.') throw new AppError('BAD_REQUEST', 'Invalid path');
  }
  return decoded;
}
