// The API description as a contract: every JSON answer the test suite's own requests get
// (through request() in http.ts) is checked against the service's OpenAPI document, so
// the document cannot drift from what the service answers. 2xx answers against the
// route's declared answer, every other status against the Error schema. A route's
// validator is compiled on its first answer, and a checker serves every service (origin)
// whose document is the same text: compiling all of them for each service started cost
// ~0.3-0.9 CPU-s each time.
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
}

interface Route {
  method: string;
  template: string;
  match: RegExp;
  literals: number;
  /** The 200 answer's validator, compiled on first use; undefined when none is declared. */
  ok: () => ValidateFunction | undefined;
}

export interface ContractChecker {
  /** Throws when the answer does not match the document; undefined for what it does not describe. */
  check(method: string, url: URL, status: number, body: unknown): void;
  /** Compiles every validator now (they are compiled on first use); returns how many answers have one. */
  compileAll(): number;
}

const checkers = new Map<string, Promise<ContractChecker | undefined>>();
/** By the document's text: services of one build serve the same document. */
const byDocument = new Map<string, ContractChecker>();

/** The checker of the service at `origin`, built once from its own document (none when it serves no document). */
export function contractOf(origin: string): Promise<ContractChecker | undefined> {
  let c = checkers.get(origin);
  if (!c) {
    c = load(origin).catch(() => undefined);
    checkers.set(origin, c);
  }
  return c;
}

async function load(origin: string): Promise<ContractChecker | undefined> {
  const res = await fetch(`${origin}/api/docs/openapi.json`);
  if (res.status !== 200) return undefined;
  const text = await res.text();
  let checker = byDocument.get(text);
  if (!checker) {
    checker = checkerFor(JSON.parse(text) as Document);
    byDocument.set(text, checker);
  }
  return checker;
}

function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}

export function checkerFor(doc: Document): ContractChecker {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema({ $id: 'vault:components', $defs: doc.components.schemas });
  const refs = (schema: unknown) => JSON.parse(JSON.stringify(schema).replaceAll('#/components/schemas/', 'vault:components#/$defs/'));
  const error = once(() => ajv.compile(refs({ $ref: '#/components/schemas/Error' })));
  const routes: Route[] = [];
  for (const [template, methods] of Object.entries(doc.paths)) {
    const segments = template.split('/');
    const match = new RegExp(`^${segments.map((s) => (/^\{.+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))).join('/')}/?$`);
    for (const [method, op] of Object.entries(methods)) {
      const schema = op.responses['200']?.content?.['application/json']?.schema;
      const ok = schema ? once(() => ajv.compile(refs(schema))) : () => undefined;
      routes.push({ method: method.toUpperCase(), template, match, literals: segments.filter((s) => !s.startsWith('{')).length, ok });
    }
  }
  // As the router does: literal segments win over parameters.
  routes.sort((a, b) => b.literals - a.literals);
  return {
    compileAll() {
      error();
      return routes.filter((r) => r.ok() !== undefined).length;
    },
    check(method, url, status, body) {
      const route = routes.find((r) => r.method === method && r.match.test(url.pathname));
      const validate = status >= 200 && status < 300 ? route?.ok() : error();
      if (!validate) return;
      if (!validate(body)) {
        const where = route ? `${route.method} ${route.template}` : `${method} ${url.pathname} (no route)`;
        throw new Error(`answer ${status} of ${where} does not match the OpenAPI document: ${JSON.stringify(validate.errors?.slice(0, 3))}`);
      }
    },
  };
}
