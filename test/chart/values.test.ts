// Chart metadata, values.yaml and values.schema.json agree with each other and with
// every `.Values.…` path the templates use.
import t from 'tap';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import {
  CHART_DIR,
  getPath,
  isMap,
  parseYamlSubset,
  readRepo,
  schemaAt,
  setPath,
  unsupportedKeywords,
  validate,
  valuesPaths,
  type Schema,
  type YamlMap,
} from './lib.js';

const chart = parseYamlSubset(readRepo('chart', 'vault-standalone', 'Chart.yaml'));
// The yaml library for values.yaml: its lists of NetworkPolicy peers are validated item by item.
const values = parseYaml(readRepo('chart', 'vault-standalone', 'values.yaml')) as YamlMap;
const schemaText = readRepo('chart', 'vault-standalone', 'values.schema.json');
const schema = JSON.parse(schemaText) as Schema;
const templateFiles = readdirSync(join(CHART_DIR, 'templates')).filter((f) => /\.(ya?ml|tpl|txt)$/.test(f));

t.test('Chart.yaml', async (t) => {
  t.equal(chart.apiVersion, 'v2');
  t.equal(chart.name, 'vault-standalone');
  t.equal(chart.version, '2.0.0');
  t.equal(chart.appVersion, '0.1.0');
  t.equal(chart.type, 'application');
});

t.test('every template .Values path exists in values.yaml and in the schema', async (t) => {
  t.ok(templateFiles.length >= 8, `templates found: ${templateFiles.join(', ')}`);
  let checked = 0;
  for (const file of templateFiles) {
    const text = readRepo('chart', 'vault-standalone', 'templates', file);
    for (const path of valuesPaths(text)) {
      checked++;
      const dotted = path.join('.');
      t.not(getPath(values, path), undefined, `${file}: .Values.${dotted} in values.yaml`);
      t.ok(schemaAt(schema, path), `${file}: .Values.${dotted} in values.schema.json properties`);
    }
  }
  // The paths the rules are about are really among them.
  const all = templateFiles.flatMap((f) => valuesPaths(readRepo('chart', 'vault-standalone', 'templates', f)).map((p) => p.join('.')));
  for (const p of [
    'service.type',
    'service.nodePort',
    'secrets.existingSecret',
    'postgresql.auth.password',
    'redis.auth.password',
    'image.repository',
    'image.tag',
    'image.pullPolicy',
    'replicaCount',
    'podAnnotations',
    'externalDatabase.existingSecret',
    'externalRedis.existingSecret',
  ]) {
    t.ok(all.includes(p), `templates use .Values.${p}`);
  }
  t.ok(checked > 30, `checked ${checked} references`);
});

t.test('every values.yaml leaf is declared in the schema', async (t) => {
  const walk = (node: YamlMap, path: string[]) => {
    for (const [k, v] of Object.entries(node)) {
      const p = [...path, k];
      const sub = schemaAt(schema, p);
      t.ok(sub, `schema declares ${p.join('.')}`);
      // Free-form maps (nodeSelector, podAnnotations, …) declare no properties.
      if (isMap(v) && Object.keys(v).length > 0 && isMap(sub?.properties)) walk(v, p);
    }
  };
  walk(values, []);
});

t.test('values.schema.json: draft-07, only keywords the checks understand', async (t) => {
  t.equal(schema.$schema, 'http://json-schema.org/draft-07/schema#');
  t.equal(schema.type, 'object');
  t.equal(schema.additionalProperties, false, 'a misspelt top-level key is an error');
  t.same(unsupportedKeywords(schema), [], 'no keyword this validator would silently ignore');
  for (const key of ['replicaCount', 'image', 'secrets', 'service', 'postgresql', 'redis']) {
    t.ok((schema.required as string[]).includes(key), `${key} is required`);
  }
});

t.test('schema: service type, node port, passwords', async (t) => {
  t.same(schemaAt(schema, ['service', 'type'])?.enum, ['ClusterIP', 'NodePort']);
  const nodePort = schemaAt(schema, ['service', 'nodePort']);
  t.equal(nodePort?.type, 'integer');
  t.equal(nodePort?.minimum, 30000);
  t.equal(nodePort?.maximum, 32767);
  for (const svc of ['postgresql', 'redis']) {
    const pw = schemaAt(schema, [svc, 'auth', 'password']);
    t.equal(pw?.type, 'string', `${svc} password is a string`);
    const patterns = ((pw?.anyOf as Schema[] | undefined) ?? []).map((b) => b.pattern).filter(Boolean);
    t.same(patterns, ['^[0-9a-f]{24}$'], `${svc} password pattern`);
  }
});

t.test('default values.yaml', async (t) => {
  t.same(validate(schema, values), [], 'validates against the schema');
  t.equal(getPath(values, ['service', 'type']), 'ClusterIP');
  t.equal(getPath(values, ['service', 'nodePort']), 30445);
  t.equal(getPath(values, ['secrets', 'existingSecret']), 'vault-secrets');
  t.equal(getPath(values, ['fullnameOverride']), '');
  t.equal(getPath(values, ['replicaCount']), 1);
  t.equal(getPath(values, ['postgresql', 'enabled']), true);
  t.equal(getPath(values, ['redis', 'enabled']), true);
  t.equal(getPath(values, ['networkPolicy', 'enabled']), true);
  t.same(getPath(values, ['nodeSelector']), { 'kubernetes.io/os': 'linux' }, 'no architecture: amd64 and arm64 both have a pinned uWS binary');
  t.equal(getPath(values, ['postgresql', 'auth', 'password']), '', 'no password committed');
  t.equal(getPath(values, ['redis', 'auth', 'password']), '', 'no password committed');
  for (const svc of [[], ['postgresql'], ['redis']]) {
    const r = getPath(values, [...svc, 'resources']);
    const where = svc.join('.') || 'app';
    t.type(getPath(r, ['requests', 'cpu']), 'string', `${where}: cpu request`);
    t.type(getPath(r, ['requests', 'memory']), 'string', `${where}: memory request`);
    t.type(getPath(r, ['limits', 'memory']), 'string', `${where}: memory limit`);
  }
});

t.test('the schema rejects bad values', async (t) => {
  const hex = '0123456789abcdef01234567';
  const ok = setPath(setPath(values, ['postgresql', 'auth', 'password'], hex), ['redis', 'auth', 'password'], hex);
  t.same(validate(schema, ok), [], 'real 24-hex passwords pass');
  t.same(validate(schema, setPath(values, ['service', 'type'], 'NodePort')), []);
  const bad: [string[], unknown, RegExp][] = [
    [['service', 'type'], 'LoadBalancer', /not in enum/],
    [['service', 'nodePort'], 80, /minimum 30000/],
    [['service', 'nodePort'], 32768, /maximum 32767/],
    [['service', 'nodePort'], '30445', /expected integer/],
    [['postgresql', 'auth', 'password'], 'hunter2', /anyOf/],
    [['postgresql', 'auth', 'password'], hex.toUpperCase(), /anyOf/],
    [['redis', 'auth', 'password'], hex.slice(1), /anyOf/],
    [['redis', 'auth', 'password'], `${hex}0`, /anyOf/],
    [['postgresql', 'enabled'], 'yes', /expected boolean/],
    [['replicaCount'], -1, /minimum 0/],
    [['image', 'pullPolicy'], 'Sometimes', /not in enum/],
    [['secrets', 'existingSecret'], '', /shorter than 1/],
    [['fullnameOverride'], 'Bad_Name', /does not match/],
  ];
  for (const [path, value, why] of bad) {
    t.match(validate(schema, setPath(values, path, value as never)).join('\n'), why, `${path.join('.')}=${JSON.stringify(value)}`);
  }
  t.match(validate(schema, { ...values, postgres: {} }).join('\n'), /unknown property postgres/);
  t.match(validate(schema, setPath(values, ['redis', 'auth'], { pasword: hex })).join('\n'), /unknown property pasword/);
});
