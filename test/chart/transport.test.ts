// The chart's network and transport rules (issue 28, points 7 and 11), read from the
// template text as the other chart checks are (no helm binary here): the metrics port
// only from Prometheus, an egress policy that allows DNS, the database, Redis and the
// named destinations and nothing else, TLS to the bundled or external PostgreSQL and Redis
// with their CA as a file, and the Redis password never on a command line.
import t from 'tap';
import { parse } from 'yaml';
import { defineBody, documents, readRepo, validate, type Schema } from './lib.js';

const tpl = (name: string) => readRepo('chart', 'vault-standalone', 'templates', name);
const helpers = tpl('_helpers.tpl');
const deployment = tpl('deployment.yaml');
const networkPolicy = tpl('networkpolicy.yaml');
const postgresql = tpl('postgresql.yaml');
const redis = tpl('redis.yaml');
const values = parse(readRepo('chart', 'vault-standalone', 'values.yaml')) as Record<string, any>;
const schema = JSON.parse(readRepo('chart', 'vault-standalone', 'values.schema.json')) as Schema;

const withValue = (path: string[], v: unknown) => {
  const copy = structuredClone(values);
  let o = copy;
  for (const k of path.slice(0, -1)) o = o[k];
  o[path.at(-1)!] = v;
  return validate(schema, copy);
};

t.test('metrics port: only from metrics.allowedFrom; the API port stays open', async (t) => {
  const app = documents(networkPolicy)[0] ?? '';
  t.match(app, /policyTypes:\n\s+- Ingress\n\s+ingress:\n\s+- ports:\n\s+- port: 8080\n\s+protocol: TCP\n/, 'port 8080 from anywhere (no from:)');
  t.match(
    app,
    /\{\{- if \.Values\.metrics\.enabled \}\}\n\s+- from:\n\s+\{\{- toYaml \.Values\.metrics\.allowedFrom \| nindent 8 \}\}\n\s+ports:\n\s+- port: \{\{ \.Values\.metrics\.port \}\}\n\s+protocol: TCP\n\s+\{\{- end \}\}/,
    'the metrics port in a rule of its own, from the named peers',
  );
  t.equal((app.match(/\.Values\.metrics\.port/g) ?? []).length, 1, 'the metrics port appears in that rule only');
  t.match(networkPolicy, /\{\{- if and \.Values\.metrics\.enabled \(not \.Values\.metrics\.allowedFrom\) \}\}\n\{\{- fail "metrics\.allowedFrom is empty/, 'an empty list is a render error, not a silent block');
  t.same(values.metrics.allowedFrom, [
    {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
    },
  ]);
  t.match(withValue(['metrics', 'allowedFrom'], 'everyone').join('\n'), /expected array/);
  t.match(withValue(['metrics', 'allowedFrom'], ['prometheus']).join('\n'), /allowedFrom\[0\]: expected object/);
});

t.test('egress: DNS, the bundled database and Redis, networkPolicy.egressTo, nothing else', async (t) => {
  const egress = documents(networkPolicy).find((d) => /policyTypes:\n\s+- Egress/.test(d));
  t.ok(egress, 'an egress policy');
  t.match(networkPolicy, /^\{\{- if \.Values\.networkPolicy\.enabled \}\}/, 'under the networkPolicy switch');
  t.match(egress, /name: \{\{ include "vault-standalone\.fullname" \. \| trunc 56 \| trimSuffix "-" \}\}-egress/);
  t.match(egress, /podSelector:\n\s+matchLabels:\n\s+\{\{- include "vault-standalone\.selectorLabels" \. \| nindent 6 \}\}\n\s+policyTypes:\n\s+- Egress\n\s+egress:/, 'for the app pods');
  t.notMatch(egress, /- Ingress/);
  t.match(
    egress,
    /- to:\n\s+\{\{- toYaml \.Values\.networkPolicy\.dns \| nindent 8 \}\}\n\s+ports:\n\s+- port: 53\n\s+protocol: UDP\n\s+- port: 53\n\s+protocol: TCP/,
    'DNS on UDP and TCP 53, to the named resolver only',
  );
  for (const [c, port] of [['postgresql', 5432], ['redis', 6379]] as const) {
    t.match(
      egress,
      new RegExp(
        `\\{\\{- if \\.Values\\.${c}\\.enabled \\}\\}\\n\\s+- to:\\n\\s+- podSelector:\\n\\s+matchLabels:\\n\\s+\\{\\{- include "vault-standalone\\.${c}\\.selectorLabels" \\. \\| nindent 14 \\}\\}\\n\\s+ports:\\n\\s+- port: ${port}\\n\\s+protocol: TCP\\n\\s+\\{\\{- end \\}\\}`,
      ),
      `the bundled ${c} pods on ${port}, when bundled`,
    );
  }
  t.match(
    egress,
    /\{\{- range \.Values\.networkPolicy\.egressTo \}\}\n\s+- to:\n\s+\{\{- if \.to \}\}\n\s+\{\{- toYaml \.to \| nindent 8 \}\}\n\s+\{\{- else \}\}\n\s+- ipBlock:\n\s+cidr: \{\{ \.cidr \| quote \}\}\n\s+\{\{- with \.except \}\}\n\s+except:\n\s+\{\{- toYaml \. \| nindent 14 \}\}\n\s+\{\{- end \}\}\n\s+\{\{- end \}\}\n\s+ports:\n\s+\{\{- range \.ports \}\}\n\s+- port: \{\{ \. \}\}\n\s+protocol: TCP\n\s+\{\{- end \}\}\n\s+\{\{- end \}\}/,
    'each named destination: its range or peers, its TCP ports',
  );
  t.equal((egress!.match(/- to:/g) ?? []).length, 4, 'four rules: DNS, PostgreSQL, Redis, the named destinations');
  t.notMatch(egress, /- to:\n\s+- \{\}|ports: \[\]|- \{\}/, 'no rule that allows everything');
  t.match(networkPolicy, /fail "networkPolicy\.enabled with an external database: name its address and port in networkPolicy\.egressTo"/);
  t.match(networkPolicy, /fail "networkPolicy\.enabled with an external Redis: name its address and port in networkPolicy\.egressTo"/);

  t.same(values.networkPolicy.egressTo, [], 'nothing beyond DNS and the bundled services by default');
  t.same(values.networkPolicy.dns, [
    { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } },
  ]);
  t.same(
    withValue(['networkPolicy', 'egressTo'], [
      { cidr: '10.0.12.7/32', ports: [5432] },
      { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '169.254.0.0/16'], ports: [443] },
      { to: [{ namespaceSelector: { matchLabels: { team: 'db' } } }], ports: [5432] },
    ]),
    [],
    'ranges with exceptions, or peers',
  );
  for (const [bad, why] of [
    [{ cidr: 'db.example.com', ports: [5432] }, /does not match/],
    [{ cidr: '10.0.0.1/32' }, /missing required ports/],
    [{ cidr: '10.0.0.1/32', ports: [0] }, /minimum 1/],
    [{ ports: [443] }, /matches no anyOf branch/],
    [{ cidr: '10.0.0.1/32', ports: [443], host: 'x' }, /unknown property host/],
  ] as const) {
    t.match(withValue(['networkPolicy', 'egressTo'], [bad]).join('\n'), why, JSON.stringify(bad));
  }
});

t.test('PostgreSQL TLS: bundled (ssl=on, verify-full) or external (its CA as DATABASE_CA_FILE)', async (t) => {
  t.match(
    postgresql,
    /\{\{- if \.Values\.postgresql\.tls\.existingSecret \}\}[^]*args:\n\s+- "-c"\n\s+- "ssl=on"\n\s+- "-c"\n\s+- "ssl_cert_file=\/var\/run\/secrets\/postgresql-tls\/tls\.crt"\n\s+- "-c"\n\s+- "ssl_key_file=\/var\/run\/secrets\/postgresql-tls\/tls\.key"/,
  );
  t.match(postgresql, /- name: tls\n\s+secret:\n\s+secretName: \{\{ \.Values\.postgresql\.tls\.existingSecret \| quote \}\}\n\s+defaultMode: 0440/, 'the key readable by the postgres group only');
  t.match(
    deployment,
    /\{\{- if \.Values\.postgresql\.tls\.existingSecret \}\}\n[^\n]*\n\s+- name: DATABASE_URL\n\s+value: "postgres:.*:5432\/\{\{ \.Values\.postgresql\.auth\.database \}\}\?sslmode=verify-full"/,
    'the bundled database with TLS: sslmode=verify-full',
  );
  t.match(deployment, /\{\{- if include "vault-standalone\.databaseCa" \. \}\}\n\s+- name: DATABASE_CA_FILE\n\s+value: \/var\/run\/secrets\/vault-standalone\/database-ca\/ca\.crt/);
  t.match(deployment, /- name: database-ca\n\s+mountPath: \/var\/run\/secrets\/vault-standalone\/database-ca\n\s+readOnly: true/);
  t.match(deployment, /- name: database-ca\n\s+secret:\n\s+secretName: \{\{ \$ref\.name \| quote \}\}\n\s+defaultMode: 0440\n\s+items:\n\s+- key: \{\{ \$ref\.key \| quote \}\}\n\s+path: ca\.crt/);
  const ca = defineBody(helpers, 'vault-standalone.databaseCa');
  t.match(ca, /\.Values\.postgresql\.tls\.existingSecret \}\}\{\{ dict "name" \. "key" "ca\.crt" \| toJson \}\}/, 'bundled: the TLS Secret\'s ca.crt');
  t.match(ca, /else if \.Values\.externalDatabase\.caSecret\.name -\}\}\n\{\{- toJson \.Values\.externalDatabase\.caSecret -\}\}/, 'external: externalDatabase.caSecret');
  t.same(values.externalDatabase.caSecret, { name: '', key: 'ca.crt' });
  t.same(values.postgresql.tls, { existingSecret: '' }, 'plain TCP unless a certificate is given');
});

t.test('Redis TLS and password: rediss:// with its CA, the password from a file everywhere', async (t) => {
  const deploymentDoc = documents(redis)[1] ?? '';
  t.match(
    deploymentDoc,
    /\{\{- if \.Values\.redis\.tls\.existingSecret \}\}[^]*- "--port"\n\s+- "0"\n\s+- "--tls-port"\n\s+- "6379"\n\s+- "--tls-cert-file"\n\s+- "\/var\/run\/secrets\/redis-tls\/tls\.crt"\n\s+- "--tls-key-file"\n\s+- "\/var\/run\/secrets\/redis-tls\/tls\.key"\n\s+- "--tls-ca-cert-file"\n\s+- "\/var\/run\/secrets\/redis-tls\/ca\.crt"/,
    'TLS only: no plain port',
  );
  t.match(deploymentDoc, /\{\{ include "vault-standalone\.redis\.cli" \. \}\} \{\{ include "vault-standalone\.redis\.cliTls" \. \}\}-h 127\.0\.0\.1/, 'the probes speak TLS too');
  t.match(defineBody(helpers, 'vault-standalone.redis.cliTls'), /--tls --cacert \/var\/run\/secrets\/redis-tls\/ca\.crt /);
  const args = /args:\n((?:\s+(?:- "[^"]*"|\{\{[^}]*\}\})\n)+)/.exec(deploymentDoc)?.[1] ?? '';
  t.ok(args.length > 0, 'redis-server\'s arguments found');
  t.notMatch(args, /\$\(|requirepass|password/i, 'no password among redis-server\'s arguments');

  t.match(deployment, /\{\{- if include "vault-standalone\.redisCa" \. \}\}\n\s+- name: REDIS_CA_FILE\n\s+value: \/var\/run\/secrets\/vault-standalone\/redis-ca\/ca\.crt/);
  t.match(deployment, /\{\{- if \.Values\.externalRedis\.passwordSecret\.name \}\}\n\s+- name: REDIS_PASSWORD_FILE\n\s+value: \/var\/run\/secrets\/vault-standalone\/redis\/password/, 'external Redis: the password from its Secret, as a file');
  t.match(deployment, /- name: redis-password\n\s+secret:\n\s+secretName: \{\{ \$ref\.name \| quote \}\}\n\s+defaultMode: 0440\n\s+items:\n\s+- key: \{\{ \$ref\.key \| quote \}\}\n\s+path: password/);
  t.match(defineBody(helpers, 'vault-standalone.redisCa'), /\.Values\.redis\.tls\.existingSecret \}\}\{\{ dict "name" \. "key" "ca\.crt" \| toJson \}\}/);
  t.match(defineBody(helpers, 'vault-standalone.redisCa'), /toJson \.Values\.externalRedis\.caSecret/);
  t.match(defineBody(helpers, 'vault-standalone.redisPasswordSecret'), /toJson \.Values\.externalRedis\.passwordSecret/);
  t.same(values.externalRedis.passwordSecret, { name: '', key: 'password' });
  t.same(values.externalRedis.caSecret, { name: '', key: 'ca.crt' });
  t.same(values.redis.tls, { existingSecret: '' });
  t.match(withValue(['externalRedis', 'passwordSecret'], { name: 'x' }).join('\n'), /missing required key/);
});

t.test('no secret value reaches an argument or a URL in any template', async (t) => {
  for (const [name, text] of [['deployment.yaml', deployment], ['redis.yaml', redis], ['postgresql.yaml', postgresql]] as const) {
    t.notMatch(text, /\$\(REDIS_PASSWORD\)/, `${name}: no $(REDIS_PASSWORD)`);
    t.notMatch(text, /--requirepass/, `${name}: no --requirepass`);
  }
});

t.test('TLS on the service port: an existing Secret or a cert-manager Certificate, mounted as files, HTTPS probes', async (t) => {
  const certificate = tpl('certificate.yaml');
  t.match(helpers, /define "vault-standalone.tlsSecret"/);
  t.match(helpers, /fail "tls.enabled needs tls.existingSecret or tls.certManager.enabled"/, 'no silent plain HTTP when TLS is asked for');
  t.match(deployment, /- name: TLS_CERT_FILE\n\s+value: \/var\/run\/secrets\/vault-standalone\/tls\/tls.crt\n\s+- name: TLS_KEY_FILE\n\s+value: \/var\/run\/secrets\/vault-standalone\/tls\/tls.key/);
  t.equal(deployment.match(/scheme: \{\{ if include "vault-standalone.tlsSecret" \. \}\}HTTPS\{\{ else \}\}HTTP\{\{ end \}\}/g)?.length, 3, 'every probe switches to HTTPS');
  t.match(deployment, /- name: tls\n\s+secret:\n\s+secretName: \{\{ include "vault-standalone.tlsSecret" \. \}\}/);
  t.match(certificate, /kind: Certificate\n/);
  t.match(certificate, /secretName: \{\{ include "vault-standalone.tlsSecret" \. \}\}/);
  t.match(certificate, /\{\{ \$svc \}\}\.\{\{ \.Release\.Namespace \}\}\.svc\n/, 'the in-cluster names');
  t.match(certificate, /fail "tls.certManager.issuerRef.name is required"/);
  t.equal(values.tls.enabled, false, 'off by default');
  t.same(withValue(['tls'], { enabled: true, existingSecret: 'vault-tls' }), [], 'schema accepts an existing Secret');
  t.not(withValue(['tls'], { enabled: true, bogus: 1 }).length, 0, 'schema refuses unknown keys');
  t.match(readRepo('chart', 'examples', 'cluster-secret-store.yaml'), /hostAPI: https:\/\//, 'the ESO example uses https');
});
