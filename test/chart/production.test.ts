// The chart as an SRE installs it: disruption budget, optional Ingress and
// ServiceMonitor, a ServiceAccount without a token, spreading beyond one replica, the
// health endpoints, a graceful stop, resources, a Redis that keeps nothing, no pinned
// architecture, a generated SETUP_TOKEN and the optional PKCS#11 key provider.
// values.yaml is parsed with the `yaml` library (no helm binary can be installed here:
// Debian's Go is too old to build it); templates are checked as text.
import t from 'tap';
import { parse } from 'yaml';
import { documents, readRepo, repoHas, validate, yamlBlocks, type Schema } from './lib.js';

const tpl = (name: string) => readRepo('chart', 'vault-standalone', 'templates', name);
const values = parse(readRepo('chart', 'vault-standalone', 'values.yaml')) as Record<string, any>;
const schema = JSON.parse(readRepo('chart', 'vault-standalone', 'values.schema.json')) as Schema;
const deployment = tpl('deployment.yaml');

t.test('values.yaml (yaml library) validates, with production defaults', async (t) => {
  t.same(validate(schema, values), []);
  t.same(values.podDisruptionBudget, { enabled: true, maxUnavailable: 1 });
  t.equal(values.serviceAccount.create, true);
  t.equal(values.ingress.enabled, false);
  t.equal(values.serviceMonitor.enabled, false);
  t.equal(values.metrics.enabled, false);
  t.same(values.setupToken, { existingSecret: '', existingSecretKey: 'SETUP_TOKEN' }, 'no generated token: the service derives the code');
  t.equal(values.keyProvider.type, 'local');
  t.same(Object.keys(values.keyProvider.pkcs11).sort(), ['keyLabel', 'module', 'moduleVolume', 'pinSecret', 'tokenLabel']);
  t.notOk('persistence' in values.redis, 'the bundled Redis keeps nothing');
  t.same(values.nodeSelector, { 'kubernetes.io/os': 'linux' });
  t.ok(values.resources.requests.cpu && values.resources.limits.memory, 'app resources');
});

t.test('the schema refuses bad production values', async (t) => {
  const bad = (path: string[], v: unknown) => {
    const copy = structuredClone(values);
    let o = copy;
    for (const k of path.slice(0, -1)) o = o[k];
    o[path.at(-1)!] = v;
    return validate(schema, copy);
  };
  t.not(bad(['keyProvider', 'type'], 'kms').length, 0, 'unknown key provider');
  t.not(bad(['podDisruptionBudget', 'maxUnavailable'], 0).length, 0, 'a budget of 0 blocks every drain');
  t.not(bad(['serviceMonitor', 'interval'], 'often').length, 0);
  t.not(bad(['shutdownGraceSeconds'], -1).length, 0);
  t.not(bad(['ingress', 'hostname'], 'x').length, 0, 'unknown ingress field');
  t.not(bad(['trustedProxies'], 'proxy.local').length, 0, 'trustedProxies: addresses and ranges only');
  t.same(bad(['trustedProxies'], '10.42.0.0/16, fd00::/8'), [], 'trustedProxies: a list of ranges');
});

t.test('TRUSTED_PROXIES reaches the app only when set', async (t) => {
  t.equal(values.trustedProxies, '', 'empty by default: X-Forwarded-For is never believed');
  t.match(deployment, /\{\{- if \.Values\.trustedProxies \}\}\s*\n\s*#[^\n]*\n\s*- name: TRUSTED_PROXIES\n\s*value: \{\{ \.Values\.trustedProxies \| quote \}\}/);
});

t.test('terminationGracePeriodSeconds = shutdownGraceSeconds + preStop sleep + 5', async (t) => {
  t.match(deployment, /terminationGracePeriodSeconds: \{\{ add \.Values\.shutdownGraceSeconds \.Values\.preStopSleepSeconds 5 \}\}/);
  t.match(deployment, /preStop:\n\s+exec:\n\s+command: \["sleep", "\{\{ \.Values\.preStopSleepSeconds \}\}"\]/);
  t.match(deployment, /- name: SHUTDOWN_GRACE_SECONDS\n\s+value: \{\{ \.Values\.shutdownGraceSeconds \| quote \}\}/);
  t.equal(values.shutdownGraceSeconds + values.preStopSleepSeconds + 5, 30, 'default: 30 s');
});

t.test('ServiceAccount without a token; the pods use it', async (t) => {
  const sa = tpl('serviceaccount.yaml');
  t.match(sa, /^kind: ServiceAccount$/m);
  t.match(sa, /^automountServiceAccountToken: false$/m);
  t.match(deployment, /serviceAccountName: \{\{ include "vault-standalone\.serviceAccountName" \. \}\}/);
  t.match(deployment, /automountServiceAccountToken: false/);
});

t.test('PodDisruptionBudget: maxUnavailable over the app pods', async (t) => {
  const pdb = tpl('poddisruptionbudget.yaml');
  t.match(pdb, /^\{\{- if \.Values\.podDisruptionBudget\.enabled \}\}/);
  t.match(pdb, /^apiVersion: policy\/v1$/m);
  t.match(pdb, /maxUnavailable: \{\{ \.Values\.podDisruptionBudget\.maxUnavailable \}\}/);
  t.match(pdb, /matchLabels:\n\s+\{\{- include "vault-standalone\.selectorLabels" \. \| nindent 6 \}\}/);
});

t.test('Ingress: optional, class, host and TLS secret from values', async (t) => {
  const ing = tpl('ingress.yaml');
  t.match(ing, /^\{\{- if \.Values\.ingress\.enabled \}\}/);
  t.match(ing, /ingressClassName: \{\{ \. \| quote \}\}/);
  t.match(ing, /secretName: \{\{ \.Values\.ingress\.tlsSecretName \| quote \}\}/);
  t.match(ing, /- host: \{\{ required "ingress\.hosts\[\]\.host is required" \.host \| quote \}\}/);
  t.match(ing, /fail "ingress\.enabled: set ingress\.hosts \(or ingress\.host\)"/);
  t.match(ing, /port:\n\s+name: http/);
});

t.test('ServiceMonitor: optional, scrapes the metrics port; metrics on their own port', async (t) => {
  const sm = tpl('servicemonitor.yaml');
  t.match(sm, /^kind: ServiceMonitor$/m);
  t.match(sm, /- port: metrics\n\s+path: \/metrics/);
  t.match(deployment, /fail "serviceMonitor\.enabled needs metrics\.enabled"/);
  t.match(deployment, /- name: METRICS_PORT\n\s+value: \{\{ \.Values\.metrics\.port \| quote \}\}\n\s+- name: METRICS_HOST\n\s+value: 0\.0\.0\.0/);
  t.match(tpl('service.yaml'), /- name: metrics\n\s+port: \{\{ \.Values\.metrics\.port \}\}/);
  t.match(tpl('networkpolicy.yaml'), /- port: \{\{ \.Values\.metrics\.port \}\}/);
});

t.test('more than one replica: anti-affinity and topology spread over nodes', async (t) => {
  t.match(deployment, /\{\{- else if include "vault-standalone\.multiReplica" \. \}\}\n(.*\n)*?\s+podAntiAffinity:/);
  t.match(deployment, /\{\{- if include "vault-standalone\.multiReplica" \. \}\}\n\s+topologySpreadConstraints:\n\s+- maxSkew: 1\n\s+topologyKey: kubernetes\.io\/hostname/);
});

t.test('no hard-coded architecture anywhere in the chart', async (t) => {
  for (const f of ['deployment.yaml', 'redis.yaml', 'postgresql.yaml']) t.notMatch(tpl(f), /kubernetes\.io\/arch|amd64|arm64/, f);
  t.notMatch(readRepo('chart', 'vault-standalone', 'values.yaml'), /kubernetes\.io\/arch:/);
});

t.test('SETUP_TOKEN: only from an existing Secret; otherwise nothing generated, nothing looked up', async (t) => {
  t.notOk(repoHas('chart', 'vault-standalone', 'templates', 'setup-token.yaml'), 'no generated setup-token Secret');
  const helpers = tpl('_helpers.tpl');
  t.notMatch(helpers, /\blookup\b/, 'nothing looked up (Argo CD renders with helm template)');
  t.notMatch(helpers, /randAlphaNum|randAlpha|randAscii/, 'nothing random: every render is the same');
  t.match(deployment, /\{\{- with \.Values\.setupToken\.existingSecret \}\}\n(.*\n)*?\s+- name: SETUP_TOKEN\n\s+valueFrom:\n\s+secretKeyRef:\n\s+name: \{\{ \. \| quote \}\}\n\s+key: \{\{ \$\.Values\.setupToken\.existingSecretKey \| quote \}\}/);
  t.match(tpl('NOTES.txt'), /node dist\/server\/cli\/main\.js setup-code/, 'the NOTES show the command that prints the derived code');
});

t.test('PKCS#11: the five settings, the PIN as a file, the module mounted read-only', async (t) => {
  for (const env of ['KEY_PROVIDER', 'PKCS11_MODULE', 'PKCS11_TOKEN_LABEL', 'PKCS11_PIN_FILE', 'PKCS11_KEY_LABEL']) {
    t.match(deployment, new RegExp(`- name: ${env}\\n`), env);
  }
  t.notMatch(deployment, /name: PKCS11_PIN\n/, 'no PIN in the environment');
  t.match(deployment, /- name: pkcs11-pin\n\s+secret:\n\s+secretName: \{\{ \.Values\.keyProvider\.pkcs11\.pinSecret\.name \| quote \}\}\n\s+defaultMode: 0400/);
  t.match(deployment, /- name: pkcs11-module\n\s+mountPath: \/opt\/pkcs11\n\s+readOnly: true/);
  t.match(deployment, /fail "keyProvider\.type is pkcs11: set keyProvider\.pkcs11\.module and keyProvider\.pkcs11\.pinSecret\.name"/);
});

t.test('the bundled Redis: a Deployment, no volume claim, no persistence', async (t) => {
  const docs = documents(tpl('redis.yaml'));
  t.match(docs[1], /^kind: Deployment$/m);
  t.notMatch(docs[1], /volumeClaimTemplates/);
  t.match(docs[1], /"--appendonly"\n\s+- "no"/);
  t.equal(yamlBlocks(docs[1] ?? '', 'resources').length, 1, 'resources');
});
