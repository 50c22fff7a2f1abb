// The API description as a contract: every JSON answer the test suite's own requests get
// (through request() in http.ts) is checked against the service's OpenAPI document, so
// the document cannot drift from what the service answers. 2xx answers against the
// route's declared answer, every other status against the Error schema.
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
  ok?: ValidateFunction;
  error: ValidateFunction;
}

export interface ContractChecker {
  /** Throws when the answer does not match the document; undefined for what it does not describe. */
  check(method: string, url: URL, status: number, body: unknown): void;
}

const checkers = new Map<string, Promise<ContractChecker | undefined>>();

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
  return checkerFor((await res.json()) as Document);
}

export function checkerFor(doc: Document): ContractChecker {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema({ $id: 'vault:components', $defs: doc.components.schemas });
  const refs = (schema: unknown) => JSON.parse(JSON.stringify(schema).replaceAll('#/components/schemas/', 'vault:components#/$defs/'));
  const error = ajv.compile(refs({ $ref: '#/components/schemas/Error' }));
  const routes: Route[] = [];
  for (const [template, methods] of Object.entries(doc.paths)) {
    const segments = template.split('/');
    const match = new RegExp(`^${segments.map((s) => (/^\{.+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))).join('/')}/?$`);
    for (const [method, op] of Object.entries(methods)) {
      const schema = op.responses['200']?.content?.['application/json']?.schema;
      routes.push({ method: method.toUpperCase(), template, match, literals: segments.filter((s) => !s.startsWith('{')).length, ok: schema ? ajv.compile(refs(schema)) : undefined, error });
    }
  }
  // As the router does: literal segments win over parameters.
  routes.sort((a, b) => b.literals - a.literals);
  return {
    check(method, url, status, body) {
      const route = routes.find((r) => r.method === method && r.match.test(url.pathname));
      const validate = status >= 200 && status < 300 ? route?.ok : error;
      if (!validate) return;
      if (!validate(body)) {
        const where = route ? `${route.method} ${route.template}` : `${method} ${url.pathname} (no route)`;
        throw new Error(`answer ${status} of ${where} does not match the OpenAPI document: ${JSON.stringify(validate.errors?.slice(0, 3))}`);
      }
    },
  };
}
