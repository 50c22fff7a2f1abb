// The small parsers the chart and Dockerfile checks rely on: if these were wrong, the
// other checks could pass vacuously.
import t from 'tap';
import { join } from 'node:path';
import {
  defineBody,
  getPath,
  parseScalar,
  parseYamlSubset,
  repoRoot,
  ROOT,
  schemaAt,
  serviceName,
  stripComment,
  unsupportedKeywords,
  validate,
  valuesPaths,
  yamlBlocks,
  type Schema,
} from './lib.js';
import { existsSync } from 'node:fs';

t.test('repoRoot finds the package root above the compiled test', async (t) => {
  t.ok(existsSync(join(ROOT, 'package.json')));
  t.ok(existsSync(join(ROOT, 'tsconfig.json')));
  t.equal(repoRoot(join(ROOT, 'a', 'b', 'c.js')), ROOT, 'walks up through missing folders');
});

t.test('scalars', async (t) => {
  t.equal(parseScalar('8080'), 8080);
  t.equal(parseScalar('-1'), -1);
  t.equal(parseScalar('1.5'), 1.5);
  t.equal(parseScalar('"8080"'), '8080', 'quoted numbers stay strings');
  t.equal(parseScalar("'it''s'"), "it's");
  t.equal(parseScalar('""'), '');
  t.equal(parseScalar('true'), true);
  t.equal(parseScalar('false'), false);
  t.equal(parseScalar('~'), null);
  t.equal(parseScalar('100m'), '100m');
  t.equal(parseScalar('0123'), '0123', 'leading zero: not an integer');
  t.same(parseScalar('{}'), {});
  t.same(parseScalar('[]'), []);
  t.throws(() => parseScalar('{a: 1}'), { name: 'YamlSubsetError', message: /flow collections/ });
  t.throws(() => parseScalar('|'), { name: 'YamlSubsetError', message: /block scalars/ });
});

t.test('comments', async (t) => {
  t.equal(stripComment('a: 1 # note'), 'a: 1');
  t.equal(stripComment('# whole line'), '');
  t.equal(stripComment('a: "x # not a comment"'), 'a: "x # not a comment"');
  t.equal(stripComment('a: b#c'), 'a: b#c', '# inside a word is not a comment');
});

t.test('nested maps, lists as leaves, flow leaves', async (t) => {
  const doc = parseYamlSubset(
    [
      '# header',
      'a: 1',
      'b:',
      '  c: "x"',
      '  d:',
      '    e: true',
      '    # comment between keys',
      '  f: {}',
      'g:',
      '  - one',
      '  - name: two',
      '    value: 2',
      'h: []',
      'i:',
      'j: last',
    ].join('\n'),
  );
  t.same(doc, {
    a: 1,
    b: { c: 'x', d: { e: true }, f: {} },
    g: ['one', 'name: two\nvalue: 2'],
    h: [],
    i: null,
    j: 'last',
  });
  t.equal(getPath(doc, ['b', 'd', 'e']), true);
  t.equal(getPath(doc, ['b', 'x']), undefined);
  t.equal(getPath(doc, ['a', 'x']), undefined, 'cannot descend into a scalar');
});

t.test('malformed input is refused, not guessed', async (t) => {
  t.throws(() => parseYamlSubset('a:\n  b: 1\n c: 2'), /inconsistent indentation/);
  t.throws(() => parseYamlSubset('a: 1\na: 2'), /duplicate key/);
  t.throws(() => parseYamlSubset('a:\n\tb: 1'), /tab/);
  t.throws(() => parseYamlSubset('- x'), /list item without a parent/);
  t.throws(() => parseYamlSubset('just text'), /not a "key: value"/);
});

t.test('template helpers', async (t) => {
  const tpl = '{{ .Values.a.b }} {{ $.Values.c }} {{ .Values.a.b | quote }} {{ .Release.Name }}';
  t.same(valuesPaths(tpl), [['a', 'b'], ['c']]);
  const helpers = '{{- define "x.one" -}}\n{{- if .A -}}a{{- else -}}b{{- end -}}\n{{- end -}}\n{{- define "x.two" -}}two{{- end -}}';
  t.equal(defineBody(helpers, 'x.one')?.trim(), '{{- if .A -}}a{{- else -}}b{{- end -}}');
  t.equal(defineBody(helpers, 'x.two'), 'two');
  t.equal(defineBody(helpers, 'x.three'), undefined);
  const blocks = yamlBlocks('a:\n  sc:\n    x: 1\n  y: 2\n  - sc:\n      z: 3\n', 'sc');
  t.same(blocks, [
    { indent: 2, body: '    x: 1' },
    { indent: 4, body: '      z: 3' },
  ]);
});

t.test('schema validator subset', async (t) => {
  const schema: Schema = {
    type: 'object',
    additionalProperties: false,
    required: ['n'],
    definitions: { hex: { type: 'string', anyOf: [{ pattern: '^[0-9a-f]{4}$' }, { const: '' }] } },
    properties: {
      n: { type: 'integer', minimum: 1, maximum: 3 },
      e: { type: 'string', enum: ['A', 'B'] },
      h: { $ref: '#/definitions/hex' },
      m: { type: ['string', 'number'] },
    },
  };
  t.same(validate(schema, { n: 2, e: 'A', h: 'beef', m: 1 }), []);
  t.same(validate(schema, { n: 2, h: '' }), [], 'empty alternative of anyOf');
  t.match(validate(schema, {}), [/missing required n/]);
  t.match(validate(schema, { n: 4 }), [/maximum/]);
  t.match(validate(schema, { n: 1.5 }), [/expected integer/]);
  t.match(validate(schema, { n: '2' }), [/expected integer/]);
  t.match(validate(schema, { n: 1, e: 'C' }), [/not in enum/]);
  t.match(validate(schema, { n: 1, h: 'BEEF' }), [/matches no anyOf/]);
  t.match(validate(schema, { n: 1, x: 1 }), [/unknown property x/]);
  t.match(validate(schema, { n: 1, m: true }), [/expected string\|number/]);
  t.same(schemaAt(schema, ['h']), schema.definitions && (schema.definitions as Schema).hex);
  t.equal(schemaAt(schema, ['nope']), undefined);
  t.same(unsupportedKeywords(schema), []);
  t.same(unsupportedKeywords({ properties: { a: { oneOf: [] } }, if: {} }), ['#/properties/a/oneOf', '#/if']);
});

t.test('naming rule', async (t) => {
  t.equal(serviceName('vault', 'vault-standalone'), 'vault-vault-standalone');
  t.equal(serviceName('vault-standalone', 'vault-standalone'), 'vault-standalone', 'collapsed');
  t.equal(serviceName('prod-vault-standalone', 'vault-standalone'), 'prod-vault-standalone');
  const long = serviceName('a'.repeat(50), 'vault-standalone');
  t.equal(long.length, 63);
  t.notOk(long.endsWith('-'));
  t.equal(serviceName('x'.repeat(50), 'vault-standalone'), `${'x'.repeat(50)}-vault-standalone`.slice(0, 63));
});
