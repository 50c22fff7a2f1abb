// Secret references: `${KEY}` (same folder) and `${env.folder.sub.KEY}` (another
// environment and path of the same project). Expansion is pure: it asks `resolve` for
// the values it needs, in batches, so a request costs one decryption per round of
// references, not one per reference.
import { AppError } from '../errors.js';

export interface ReferenceTarget {
  environment: string;
  path: string;
  key: string;
}

const REF = /\$\{([^{}\s]{1,512})\}/g;
export const MAX_REFERENCE_DEPTH = 5;
const MAX_EXPANDED_CHARS = 16 * 1024 * 1024;

/** Where a reference points, relative to the secret that holds it; null when malformed. */
export function parseReference(body: string, here: { environment: string; path: string }): ReferenceTarget | null {
  const parts = body.split('.');
  if (parts.some((p) => p === '')) return null;
  if (parts.length === 1) return { environment: here.environment, path: here.path, key: parts[0]! };
  const [environment, ...rest] = parts;
  const key = rest.pop()!;
  return { environment: environment!, path: rest.length ? `/${rest.join('/')}` : '/', key };
}

export const targetId = (t: ReferenceTarget) => `${t.environment}\u0000${t.path}\u0000${t.key}`;

export interface ExpandInput {
  value: string;
  environment: string;
  path: string;
}

/**
 * Expands references in `inputs`. `resolve` gets the targets not yet known and returns
 * their raw (unexpanded) values; a target it cannot find is left as written.
 */
export async function expandReferences(
  inputs: ExpandInput[],
  known: Map<string, string>,
  resolve: (targets: ReferenceTarget[]) => Promise<Map<string, string>>,
): Promise<string[]> {
  const missing = new Set<string>();

  async function ensure(values: ExpandInput[]) {
    const wanted = new Map<string, ReferenceTarget>();
    for (const v of values) {
      if (!v.value.includes('${')) continue;
      for (const m of v.value.matchAll(REF)) {
        const t = parseReference(m[1]!, v);
        if (!t) continue;
        const id = targetId(t);
        if (!known.has(id) && !missing.has(id)) wanted.set(id, t);
      }
    }
    if (wanted.size === 0) return [];
    const found = await resolve([...wanted.values()]);
    const next: ExpandInput[] = [];
    for (const [id, t] of wanted) {
      const value = found.get(id);
      if (value === undefined) missing.add(id);
      else {
        known.set(id, value);
        next.push({ value, environment: t.environment, path: t.path });
      }
    }
    return next;
  }

  // Fetch rounds: each round may reveal references of references.
  let frontier = inputs;
  for (let depth = 0; depth < MAX_REFERENCE_DEPTH && frontier.length; depth++) frontier = await ensure(frontier);

  // Memoised per target, with a cycle guard and an output budget: references can
  // fan out, and a hostile value must not make the response explode.
  const expanded = new Map<string, string>();
  const visiting = new Set<string>();
  let budget = MAX_EXPANDED_CHARS;

  function substitute(v: ExpandInput, depth: number): string {
    if (!v.value.includes('${')) return v.value;
    return v.value.replace(REF, (whole, body: string) => {
      const t = parseReference(body, v);
      if (!t) return whole;
      const id = targetId(t);
      const raw = known.get(id);
      if (raw === undefined || depth >= MAX_REFERENCE_DEPTH || visiting.has(id)) return whole;
      let out = expanded.get(id);
      if (out === undefined) {
        visiting.add(id);
        out = substitute({ value: raw, environment: t.environment, path: t.path }, depth + 1);
        visiting.delete(id);
        expanded.set(id, out);
      }
      budget -= out.length;
      if (budget < 0) throw new AppError('VALIDATION', 'Expanding secret references exceeds the size limit');
      return out;
    });
  }
  return inputs.map((v) => substitute(v, 0));
}
