// Static checks for the deployment artefacts (Helm chart, Dockerfile). No helm, no
// Docker and no YAML library here: small, tested parsers for exactly the subset of
// YAML / JSON Schema / Dockerfile that these files use.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { globSource } from '../../server/domain/glob.js';

/** The package root: the nearest directory above this file holding package.json. */
export function repoRoot(from: string = fileURLToPath(import.meta.url)): string {
  let dir = dirname(from);
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${from}`);
    dir = up;
  }
}

export const ROOT = repoRoot();
export const CHART_DIR = join(ROOT, 'chart', 'vault-standalone');

export function readRepo(...parts: string[]): string {
  return readFileSync(join(ROOT, ...parts), 'utf8');
}

export function repoHas(...parts: string[]): boolean {
  return existsSync(join(ROOT, ...parts));
}

// ---------------------------------------------------------------------------
// YAML subset: block maps, scalars, flow `{}` / `[]`, block lists (kept as leaves).
// ---------------------------------------------------------------------------

export type Yaml = string | number | boolean | null | Yaml[] | { [k: string]: Yaml };
export type YamlMap = { [k: string]: Yaml };

export class YamlSubsetError extends Error {
  override name = 'YamlSubsetError';
}

/** Strips a trailing comment: a `#` at the start or after whitespace, outside quotes. */
export function stripComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) {
      return line.slice(0, i).trimEnd();
    }
  }
  return line.trimEnd();
}

export function parseScalar(raw: string): Yaml {
  const s = raw.trim();
  if (s === '' || s === '~' || s === 'null') return null;
  if (s === '{}') return {};
  if (s === '[]') return [];
  if (s === 'true') return true;
  if (s === 'false') return false;
  const dq = /^"((?:[^"\\]|\\.)*)"$/.exec(s);
  if (dq) return JSON.parse(`"${dq[1]}"`) as string;
  const sq = /^'((?:[^']|'')*)'$/.exec(s);
  if (sq) return sq[1]!.replace(/''/g, "'");
  if (/^[-+]?(0|[1-9][0-9]*)$/.test(s)) return Number(s);
  if (/^[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/.test(s)) return Number(s);
  if (/^[[{]/.test(s)) throw new YamlSubsetError(`flow collections other than {} and [] are not supported: ${s}`);
  if (/^[|>]/.test(s)) throw new YamlSubsetError(`block scalars are not supported: ${s}`);
  return s;
}

/**
 * Parses the indentation-based subset of YAML used by values.yaml: nested block maps
 * with scalar leaves. A block list becomes an array of its items' raw text (lists are
 * leaves: nothing below an item is interpreted). Anything else throws.
 */
export function parseYamlSubset(text: string): YamlMap {
  const root: YamlMap = {};
  // Open maps, innermost last; `indent` is the column of their keys (-1: not yet known).
  const stack: { indent: number; map: YamlMap }[] = [{ indent: 0, map: root }];
  // A key seen with an empty value: its children decide whether it is a map or a list.
  let pending: { parent: YamlMap; key: string; indent: number } | null = null;
  let list: { items: Yaml[]; indent: number } | null = null;

  const lines = text.split(/\r?\n/);
  for (const [n, original] of lines.entries()) {
    const where = `line ${n + 1}`;
    if (/^\s*\t/.test(original)) throw new YamlSubsetError(`${where}: tab indentation`);
    const line = stripComment(original);
    if (line.trim() === '' || line.trim() === '---') continue;
    const indent = line.length - line.trimStart().length;
    const body = line.trim();

    // Inside a block list: deeper lines belong to the current item and stay raw.
    if (list) {
      if (indent > list.indent || (indent === list.indent && body.startsWith('- '))) {
        if (indent === list.indent) list.items.push(body.slice(2).trim());
        else list.items[list.items.length - 1] += `\n${body}`;
        continue;
      }
      list = null;
    }

    if (body === '-' || body.startsWith('- ')) {
      if (!pending || indent < pending.indent) throw new YamlSubsetError(`${where}: list item without a parent key`);
      const items: Yaml[] = [body.slice(1).trim()];
      pending.parent[pending.key] = items;
      list = { items, indent };
      pending = null;
      continue;
    }

    const m = /^([A-Za-z0-9_.\-/]+|"[^"]*"|'[^']*'):(?:\s+(.*))?$/.exec(body);
    if (!m) throw new YamlSubsetError(`${where}: not a "key: value" line: ${body}`);
    const key = m[1]!.replace(/^["']|["']$/g, '');
    const rest = m[2] ?? '';

    if (pending) {
      if (indent > pending.indent) {
        const child: YamlMap = {};
        pending.parent[pending.key] = child;
        stack.push({ indent, map: child });
      } else {
        pending.parent[pending.key] = null;
      }
      pending = null;
    }
    while (stack.length > 1 && indent < stack[stack.length - 1]!.indent) stack.pop();
    const top = stack[stack.length - 1]!;
    if (indent !== top.indent) throw new YamlSubsetError(`${where}: inconsistent indentation (${indent}, expected ${top.indent})`);
    if (Object.prototype.hasOwnProperty.call(top.map, key)) throw new YamlSubsetError(`${where}: duplicate key ${key}`);

    if (rest === '') {
      top.map[key] = null;
      pending = { parent: top.map, key, indent };
    } else {
      top.map[key] = parseScalar(rest);
    }
  }
  return root;
}

export function isMap(v: unknown): v is YamlMap {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The value at a dotted path, or undefined when any segment is missing. */
export function getPath(obj: unknown, path: string[]): unknown {
  let cur: unknown = obj;
  for (const seg of path) {
    if (!isMap(cur) || !Object.prototype.hasOwnProperty.call(cur, seg)) return undefined;
    cur = cur[seg];
  }
  return cur;
}

export function setPath(obj: YamlMap, path: string[], value: Yaml): YamlMap {
  const copy = structuredClone(obj);
  let cur: YamlMap = copy;
  for (const seg of path.slice(0, -1)) {
    const next = cur[seg];
    if (!isMap(next)) throw new Error(`no map at ${seg}`);
    cur = next;
  }
  cur[path[path.length - 1]!] = value;
  return copy;
}

// ---------------------------------------------------------------------------
// Helm templates
// ---------------------------------------------------------------------------

/** Every distinct `.Values.a.b.c` path referenced in a template text. */
export function valuesPaths(template: string): string[][] {
  const found = new Set<string>();
  for (const m of template.matchAll(/\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)) found.add(m[1]!.slice(1));
  return [...found].sort().map((p) => p.split('.'));
}

/** The body of `{{- define "name" -}} … {{- end -}}` in a helpers file. */
export function defineBody(helpers: string, name: string): string | undefined {
  const start = new RegExp(`\\{\\{-?\\s*define\\s+"${name.replace(/\./g, '\\.')}"\\s*-?\\}\\}`).exec(helpers);
  if (!start) return undefined;
  const rest = helpers.slice(start.index + start[0].length);
  // Nested if/with/range blocks each close with an end; the define closes at depth 0.
  let depth = 0;
  for (const m of rest.matchAll(/\{\{-?\s*(if|with|range|define|end)\b[^}]*\}\}/g)) {
    if (m[1] === 'end') {
      if (depth === 0) return rest.slice(0, m.index);
      depth--;
    } else depth++;
  }
  return undefined;
}

/** Splits a multi-document template on `---` lines. */
export function documents(text: string): string[] {
  return text.split(/^---\s*$/m);
}

/**
 * The lines under the first line matching `key:` (optionally only at a given
 * indentation), i.e. every following line indented deeper, with template-only lines
 * (`{{- … }}`) kept. Returns the block text and the key's indentation.
 */
export function yamlBlocks(text: string, key: string): { indent: number; body: string }[] {
  const lines = text.split('\n');
  const out: { indent: number; body: string }[] = [];
  const keyRe = new RegExp(`^(\\s*)(?:- )?${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\s*$`);
  for (let i = 0; i < lines.length; i++) {
    const m = keyRe.exec(lines[i]!);
    if (!m) continue;
    const indent = m[1]!.length + (lines[i]!.trimStart().startsWith('- ') ? 2 : 0);
    const body: string[] = [];
    for (let j = i + 1; j < lines.length; j++) {
      const l = lines[j]!;
      if (l.trim() === '') continue;
      const ind = l.length - l.trimStart().length;
      if (ind <= indent) break;
      body.push(l);
    }
    out.push({ indent, body: body.join('\n') });
  }
  return out;
}

// ---------------------------------------------------------------------------
// JSON Schema (draft-07) subset validator
// ---------------------------------------------------------------------------

export type Schema = { [k: string]: unknown };

/** Keywords this validator enforces, plus annotations it may ignore safely. */
export const SUPPORTED_KEYWORDS = new Set([
  'type', 'enum', 'const', 'pattern', 'minimum', 'maximum', 'minLength', 'maxLength',
  'required', 'properties', 'additionalProperties', 'anyOf', '$ref', 'items',
  // annotations / containers
  '$schema', 'title', 'description', 'definitions', 'default', 'examples',
]);

/** Every keyword used anywhere in the schema that the validator does not know. */
export function unsupportedKeywords(schema: unknown, at = '#'): string[] {
  if (!isMap(schema)) return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(schema)) {
    if (!SUPPORTED_KEYWORDS.has(k)) out.push(`${at}/${k}`);
    if (k === 'properties' || k === 'definitions') {
      for (const [name, sub] of Object.entries(v as Schema)) out.push(...unsupportedKeywords(sub, `${at}/${k}/${name}`));
    } else if (k === 'anyOf') {
      (v as unknown[]).forEach((sub, i) => out.push(...unsupportedKeywords(sub, `${at}/anyOf/${i}`)));
    } else if ((k === 'additionalProperties' || k === 'items') && isMap(v)) {
      out.push(...unsupportedKeywords(v, `${at}/${k}`));
    }
  }
  return out;
}

export function resolveRef(root: Schema, schema: Schema): Schema {
  let s = schema;
  for (let hops = 0; typeof s.$ref === 'string'; hops++) {
    if (hops > 10) throw new Error('$ref loop');
    const ref = s.$ref as string;
    if (!ref.startsWith('#/')) throw new Error(`only local $ref supported: ${ref}`);
    const target = getPath(root, ref.slice(2).split('/'));
    if (!isMap(target)) throw new Error(`unresolved $ref ${ref}`);
    s = target;
  }
  return s;
}

/** The sub-schema for a values path, following properties and $ref; undefined if absent. */
export function schemaAt(root: Schema, path: string[]): Schema | undefined {
  let s: Schema = resolveRef(root, root);
  for (const seg of path) {
    const props = s.properties;
    if (!isMap(props) || !isMap(props[seg])) return undefined;
    s = resolveRef(root, props[seg] as Schema);
  }
  return s;
}

function typeOf(v: unknown): string[] {
  if (v === null) return ['null'];
  if (Array.isArray(v)) return ['array'];
  if (typeof v === 'number') return Number.isInteger(v) ? ['integer', 'number'] : ['number'];
  return [typeof v];
}

/** Validates `value` against the subset; returns error strings (empty when valid). */
export function validate(root: Schema, value: unknown, schema: Schema = root, at = '$'): string[] {
  const s = resolveRef(root, schema);
  const errors: string[] = [];
  if (s.type !== undefined) {
    const allowed = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    if (!typeOf(value).some((t) => allowed.includes(t))) {
      return [`${at}: expected ${allowed.join('|')}, got ${typeOf(value)[0]}`];
    }
  }
  if (s.enum !== undefined && !(s.enum as unknown[]).some((e) => e === value)) {
    errors.push(`${at}: ${JSON.stringify(value)} not in enum ${JSON.stringify(s.enum)}`);
  }
  if (s.const !== undefined && s.const !== value) errors.push(`${at}: must equal ${JSON.stringify(s.const)}`);
  if (typeof value === 'string') {
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(value)) {
      errors.push(`${at}: ${JSON.stringify(value)} does not match ${s.pattern}`);
    }
    if (typeof s.minLength === 'number' && [...value].length < s.minLength) errors.push(`${at}: shorter than ${s.minLength}`);
    if (typeof s.maxLength === 'number' && [...value].length > s.maxLength) errors.push(`${at}: longer than ${s.maxLength}`);
  }
  if (typeof value === 'number') {
    if (typeof s.minimum === 'number' && value < s.minimum) errors.push(`${at}: ${value} < minimum ${s.minimum}`);
    if (typeof s.maximum === 'number' && value > s.maximum) errors.push(`${at}: ${value} > maximum ${s.maximum}`);
  }
  if (Array.isArray(s.anyOf)) {
    const branches = (s.anyOf as Schema[]).map((b) => validate(root, value, b, at));
    if (!branches.some((b) => b.length === 0)) errors.push(`${at}: matches no anyOf branch (${branches.flat().join('; ')})`);
  }
  if (Array.isArray(value) && isMap(s.items)) {
    value.forEach((item, i) => errors.push(...validate(root, item, s.items as Schema, `${at}[${i}]`)));
  }
  if (isMap(value)) {
    const props = isMap(s.properties) ? (s.properties as Record<string, Schema>) : {};
    for (const req of (s.required as string[] | undefined) ?? []) {
      if (!(req in value)) errors.push(`${at}: missing required ${req}`);
    }
    for (const [k, v] of Object.entries(value)) {
      const sub = props[k];
      if (sub) errors.push(...validate(root, v, sub, `${at}.${k}`));
      else if (s.additionalProperties === false) errors.push(`${at}: unknown property ${k}`);
      else if (isMap(s.additionalProperties)) errors.push(...validate(root, v, s.additionalProperties, `${at}.${k}`));
    }
  }
  return errors;
}

// ---------------------------------------------------------------------------
// Naming rule
// ---------------------------------------------------------------------------

/** The chart's naming rule, as _helpers.tpl states it: release + chart + chart, max 63. */
/** Helm's convention, as _helpers.tpl's fullname: <release>-<chart>, or the release alone when it contains the chart name. */
export function serviceName(release: string, chart: string): string {
  return (release.includes(chart) ? release : `${release}-${chart}`).slice(0, 63).replace(/-+$/, '');
}

// ---------------------------------------------------------------------------
// .dockerignore
// ---------------------------------------------------------------------------

export function dockerignorePatterns(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** A .dockerignore pattern as a regular expression: Go filepath.Match, plus `**` and a leading `**`+`/`. */
export function dockerignoreRegExp(pattern: string): RegExp {
  const rest = pattern.replace(/^\.\//, '').replace(/\/$/, '');
  // A leading `**/` also matches at the top (no directory at all).
  if (rest.startsWith('**/')) return new RegExp(`^(?:.*/)?${globSource(rest.slice(3))}$`);
  return new RegExp(`^${globSource(rest)}$`);
}

/** Whether a .dockerignore pattern list excludes a context-relative path (no `!` re-includes). */
export function dockerignored(patterns: string[], path: string): boolean {
  const norm = path.replace(/^\.\//, '').replace(/\/$/, '');
  const prefixes = norm.split('/').map((_, i, a) => a.slice(0, i + 1).join('/'));
  return patterns.some((p) => {
    const re = dockerignoreRegExp(p);
    return prefixes.some((pre) => re.test(pre));
  });
}

// ---------------------------------------------------------------------------
// HCL (Terraform), as `terraform fmt` lays it out: one block header or attribute
// per line. Enough to read names, labels, attribute values and object literals.
// ---------------------------------------------------------------------------

/** The text with comments blanked and string contents replaced by `_` (same length, same lines). */
export function maskHcl(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === '\\') {
        out += '__';
        i++;
      } else if (c === '"') {
        out += c;
        inString = false;
      } else out += c === '\n' ? '\n' : '_';
      continue;
    }
    if (c === '"') {
      inString = true;
      out += c;
    } else if (c === '#' || (c === '/' && text[i + 1] === '/')) {
      while (i < text.length && text[i] !== '\n') {
        out += ' ';
        i++;
      }
      if (i < text.length) out += '\n';
    } else out += c;
  }
  return out;
}

export type HclEntry =
  | { kind: 'block'; type: string; labels: string[]; body: string }
  | { kind: 'attr'; name: string; value: string };

/** The entries at the top level of an HCL text or of a block's body. */
export function hclEntries(text: string): HclEntry[] {
  const masked = maskHcl(text).split('\n');
  // Each line without its comment (blanked in the masked copy).
  const lines = text.split('\n').map((l, i) => l.slice(0, masked[i]!.trimEnd().length));
  const out: HclEntry[] = [];
  let depth = 0;
  let open: { entry: HclEntry; from: number } | null = null;
  for (let i = 0; i < lines.length; i++) {
    const m = masked[i]!;
    const start = depth;
    if (start === 0 && m.trim() !== '') {
      const block = /^\s*([A-Za-z_][\w-]*)((?:\s+"[^"]*")*)\s*\{\s*$/.exec(m);
      const attr = /^\s*([A-Za-z_][\w-]*)\s*=\s*(.*)$/.exec(m);
      if (block) {
        const labels = [...lines[i]!.matchAll(/"([^"]*)"/g)].map((x) => x[1]!);
        open = { entry: { kind: 'block', type: block[1]!, labels, body: '' }, from: i + 1 };
      } else if (attr) {
        const value = lines[i]!.slice(lines[i]!.indexOf('=') + 1).trim();
        open = { entry: { kind: 'attr', name: attr[1]!, value }, from: i };
      } else {
        throw new Error(`line ${i + 1}: not a block or attribute: ${lines[i]}`);
      }
    }
    for (const c of m) {
      if (c === '{' || c === '(' || c === '[') depth++;
      else if (c === '}' || c === ')' || c === ']') depth--;
    }
    if (depth < 0) throw new Error(`line ${i + 1}: unbalanced closing bracket`);
    if (depth === 0 && open) {
      if (open.entry.kind === 'block') open.entry.body = lines.slice(open.from, i).join('\n');
      else if (i > open.from) open.entry.value = [open.entry.value, ...lines.slice(open.from + 1, i + 1)].join('\n');
      out.push(open.entry);
      open = null;
    }
  }
  if (depth !== 0 || open) throw new Error('unbalanced brackets at the end');
  return out;
}

export function hclBlocks(text: string, type: string): Extract<HclEntry, { kind: 'block' }>[] {
  return hclEntries(text).filter((e): e is Extract<HclEntry, { kind: 'block' }> => e.kind === 'block' && e.type === type);
}

export function hclAttrs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of hclEntries(text)) if (e.kind === 'attr') out[e.name] = e.value;
  return out;
}

/** A quoted HCL string without interpolation, or undefined. */
export function hclString(raw: string | undefined): string | undefined {
  if (raw === undefined || !/^"(?:[^"\\$]|\\.)*"$/.test(raw.trim())) return undefined;
  return JSON.parse(raw.trim()) as string;
}

/**
 * The leaves of an HCL object literal (`{ a = { b = var.x } }`, nested over lines or
 * inline), as dotted path -> raw expression. Quoted keys are unquoted.
 */
export function hclObjectLeaves(literal: string): Record<string, string> {
  const tokens = maskHcl(literal).match(/"[^"\n]*"|[^\s{}=,"]+|[{}=,]/g) ?? [];
  // Map masked tokens back to the original text by position.
  const original: string[] = [];
  const masked = maskHcl(literal);
  let at = 0;
  for (const tok of tokens) {
    const idx = masked.indexOf(tok, at);
    original.push(literal.slice(idx, idx + tok.length));
    at = idx + tok.length;
  }
  const leaves: Record<string, string> = {};
  const path: string[] = [];
  for (let i = 0; i < original.length; i++) {
    const tok = original[i]!;
    if (tok === '{' || tok === ',') continue;
    if (tok === '}') {
      path.pop();
      continue;
    }
    if (original[i + 1] !== '=') throw new Error(`expected "key =" at ${tok}`);
    const key = tok.replace(/^"|"$/g, '');
    const value = original[i + 2];
    if (value === '{') {
      path.push(key);
      i += 2;
    } else {
      leaves[[...path, key].join('.')] = value!;
      i += 2;
    }
  }
  return leaves;
}
