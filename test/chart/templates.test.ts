// The rules the chart must keep, read from the template text: naming, ports, pod
// hardening, probes, secrets by reference, the bundled services and their policies.
import t, { type Test } from 'tap';
import { defineBody, documents, readRepo, yamlBlocks } from './lib.js';

const tpl = (name: string) => readRepo('chart', 'vault-standalone', 'templates', name);
const helpers = tpl('_helpers.tpl');
const deployment = tpl('deployment.yaml');
const service = tpl('service.yaml');
const secret = tpl('secret.yaml');
const postgresql = tpl('postgresql.yaml');
const redis = tpl('redis.yaml');
const networkPolicy = tpl('networkpolicy.yaml');

/** The pod-level and container-level securityContext blocks of a workload template. */
function securityContexts(t: Test, text: string): { pod: string; container: string } {
  const blocks = yamlBlocks(text, 'securityContext').sort((a, b) => a.indent - b.indent);
  t.equal(blocks.length, 2, 'one pod and one container securityContext');
  return { pod: blocks[0]?.body ?? '', container: blocks[1]?.body ?? '' };
}

function assertHardenedContainer(t: Test, container: string) {
  t.match(container, /^\s+allowPrivilegeEscalation: false$/m);
  t.match(container, /^\s+readOnlyRootFilesystem: true$/m);
  t.match(container, /^\s+capabilities:\n\s+drop:\n\s+- ALL$/m);
  t.notMatch(container, /add:/, 'no capability added');
}

function assertPod(t: Test, pod: string, uid: number) {
  t.match(pod, /^\s+runAsNonRoot: true$/m);
  t.match(pod, new RegExp(`^\\s+runAsUser: ${uid}$`, 'm'));
  t.match(pod, new RegExp(`^\\s+runAsGroup: ${uid}$`, 'm'));
  t.match(pod, new RegExp(`^\\s+fsGroup: ${uid}$`, 'm'));
  t.match(pod, /^\s+seccompProfile:\n\s+type: RuntimeDefault$/m);
}

t.test("naming helper: Helm's <release>-<name>, collapsed when the release holds the name", async (t) => {
  const body = defineBody(helpers, 'vault-standalone.fullname');
  t.ok(body, 'vault-standalone.fullname is defined');
  t.match(body, /if contains \$name \.Release\.Name/);
  t.match(body, /printf "%s-%s" \.Release\.Name \$name \| trunc 63 \| trimSuffix "-"/);
  t.match(body, /if \.Values\.fullnameOverride/, 'fullnameOverride replaces it');
  // Bundled services: prefix cut before the suffix so names never collide and stay
  // short enough for a StatefulSet.
  t.match(defineBody(helpers, 'vault-standalone.componentPrefix'), /trunc 41/);
  t.match(defineBody(helpers, 'vault-standalone.postgresql.fullname'), /-postgresql/);
  t.match(defineBody(helpers, 'vault-standalone.redis.fullname'), /-redis/);
});

t.test('service: fullname, 8080 -> 8080, NodePort 30445 only when asked', async (t) => {
  const svc = documents(service);
  t.equal(svc.length, 1);
  t.match(service, /^kind: Service$/m);
  t.match(service, /^ {2}name: \{\{ include "vault-standalone\.fullname" \. \}\}$/m, 'named by the naming helper');
  t.match(service, /^ {2}type: \{\{ \.Values\.service\.type \}\}$/m);
  t.match(service, /^\s+port: 8080$/m);
  t.match(service, /^\s+targetPort: 8080$/m);
  t.match(service, /\{\{-? if eq \.Values\.service\.type "NodePort" \}\}\n\s+nodePort: \{\{ \.Values\.service\.nodePort \}\}/);
  t.match(service, /selector:\n\s+\{\{- include "vault-standalone\.selectorLabels" \. \| nindent 4 \}\}/);
});

t.test('deployment: container, port, bootstrap secret', async (t) => {
  t.match(deployment, /^kind: Deployment$/m);
  t.match(deployment, /^ {2}name: \{\{ include "vault-standalone\.fullname" \. \}\}$/m);
  t.match(deployment, /^ {2}replicas: \{\{ \.Values\.replicaCount \}\}$/m);
  t.match(deployment, /^\s+containerPort: 8080$/m);
  t.notMatch(deployment, /containerPort: (?!8080|\{\{ \.Values\.metrics\.port \}\})/, 'no other container port than the optional metrics one');
  t.match(deployment, /envFrom:\n\s+- secretRef:\n\s+name: \{\{ \.Values\.secrets\.existingSecret \| quote \}\}/);
  t.match(deployment, /image: \{\{ include "vault-standalone\.image" \. \| quote \}\}/);
  t.match(defineBody(helpers, 'vault-standalone.image'), /\.Values\.image\.repository.*\.Values\.image\.tag \| default \.Chart\.AppVersion/);
  t.match(deployment, /imagePullPolicy: \{\{ \.Values\.image\.pullPolicy \}\}/);
  t.match(deployment, /automountServiceAccountToken: false/);
});

t.test('deployment: pod and container hardening', async (t) => {
  const { pod, container } = securityContexts(t, deployment);
  assertPod(t, pod, 1001);
  assertHardenedContainer(t, container);
});

t.test('deployment: probes on /api/health/live and /api/health/ready, port 8080', async (t) => {
  for (const [probe, path] of [['readinessProbe', 'ready'], ['livenessProbe', 'live'], ['startupProbe', 'live']] as const) {
    const blocks = yamlBlocks(deployment, probe);
    t.equal(blocks.length, 1, `${probe} present once`);
    t.match(blocks[0]?.body, new RegExp(`httpGet:\\n\\s+path: /api/health/${path}\\n\\s+port: 8080$`, 'm'), `${probe} httpGet /api/health/${path} 8080`);
  }
});

t.test('deployment: writable /tmp and /data are emptyDirs', async (t) => {
  t.match(deployment, /- name: tmp\n\s+mountPath: \/tmp\n\s+- name: data\n\s+mountPath: \/data/);
  t.match(deployment, /- name: tmp\n\s+emptyDir:/);
  t.match(deployment, /- name: data\n\s+emptyDir:/);
  t.match(deployment, /name: DATA_DIR\n\s+value: \/data/);
  t.notMatch(deployment, /hostPath/);
});

t.test('deployment: database and cache URLs built from secretKeyRef, never inline', async (t) => {
  t.notMatch(deployment, /\.Values\.(postgresql|redis)\.auth\.password/, 'passwords are not templated into the pod spec');
  const pg = /- name: POSTGRESQL_PASSWORD\n\s+valueFrom:\n\s+secretKeyRef:\n\s+name: \{\{ include "vault-standalone\.authSecretName" \. \}\}\n\s+key: postgresql-password/.exec(deployment);
  t.ok(pg, 'POSTGRESQL_PASSWORD from the chart Secret');
  const dbUrl = /- name: DATABASE_URL\n\s+value: "postgres:\/\/\{\{ \.Values\.postgresql\.auth\.username \}\}:\$\(POSTGRESQL_PASSWORD\)@\{\{ include "vault-standalone\.postgresql\.fullname" \. \}\}:5432\/\{\{ \.Values\.postgresql\.auth\.database \}\}(\?sslmode=verify-full)?"/.exec(deployment);
  t.ok(dbUrl, 'DATABASE_URL interpolates $(POSTGRESQL_PASSWORD)');
  t.ok(pg && dbUrl && pg.index < dbUrl.index, 'the variable is defined before it is used');

  // The Redis password: a file from the chart's Secret, neither in the URL nor in the environment.
  t.match(deployment, /- name: REDIS_PASSWORD_FILE\n\s+value: \/var\/run\/secrets\/vault-standalone\/redis\/password\n\s+- name: REDIS_URL\n\s+value: "\{\{ if \.Values\.redis\.tls\.existingSecret \}\}rediss\{\{ else \}\}redis\{\{ end \}\}:\/\/\{\{ include "vault-standalone\.redis\.fullname" \. \}\}:6379\/0"/);
  t.notMatch(deployment, /name: REDIS_PASSWORD\n/, 'no REDIS_PASSWORD variable');
  t.notMatch(deployment, /REDIS_PASSWORD\)/, 'no $(REDIS_PASSWORD) in a URL');
  t.match(defineBody(helpers, 'vault-standalone.redisPasswordSecret'), /dict "name" \(include "vault-standalone\.authSecretName" \.\) "key" "redis-password"/);

  // Disabled bundled services: URLs from existing Secrets.
  t.match(deployment, /name: DATABASE_URL\n\s+valueFrom:\n\s+secretKeyRef:\n\s+name: \{\{ \.Values\.externalDatabase\.existingSecret \| quote \}\}/);
  t.match(deployment, /name: REDIS_URL\n\s+valueFrom:\n\s+secretKeyRef:\n\s+name: \{\{ \.Values\.externalRedis\.existingSecret \| quote \}\}/);
  t.match(deployment, /fail "postgresql\.enabled is false: set externalDatabase\.existingSecret/, 'no silent embedded database on an emptyDir');
});

t.test('deployment: checksum of the chart Secret rolls the pods', async (t) => {
  t.match(deployment, /checksum\/secret: \{\{ include \(print \$\.Template\.BasePath "\/secret\.yaml"\) \. \| sha256sum \}\}/);
  t.match(deployment, /\{\{- with \.Values\.podAnnotations \}\}/);
  t.match(deployment, /resources:\n\s+\{\{- toYaml \.Values\.resources \| nindent 12 \}\}/);
});

t.test('chart Secret: both passwords, validated', async (t) => {
  t.match(secret, /^kind: Secret$/m);
  t.match(secret, /name: \{\{ include "vault-standalone\.authSecretName" \. \}\}/);
  t.match(secret, /postgresql-password: \{\{ include "vault-standalone\.postgresql\.password" \. \| b64enc \| quote \}\}/);
  t.match(secret, /redis-password: \{\{ include "vault-standalone\.redis\.password" \. \| b64enc \| quote \}\}/);
  for (const svc of ['postgresql', 'redis']) {
    const body = defineBody(helpers, `vault-standalone.${svc}.password`);
    t.match(body, new RegExp(`\\.Values\\.${svc}\\.auth\\.password`));
    t.match(body, /regexMatch "\^\[0-9a-f\]\{24\}\$"/, `${svc}: 24 hex enforced at render time`);
    t.match(body, /fail "/, `${svc}: required, render fails without it`);
  }
});

t.test('postgresql: StatefulSet + Service + PVC, uid 999, hardened', async (t) => {
  t.match(postgresql, /^\{\{- if \.Values\.postgresql\.enabled \}\}/);
  const docs = documents(postgresql);
  t.equal(docs.length, 2);
  t.match(docs[0], /^kind: Service$/m);
  t.match(docs[0], /port: 5432/);
  t.match(docs[1], /^kind: StatefulSet$/m);
  t.match(docs[1], /volumeClaimTemplates:\n\s+- metadata:\n\s+name: data/);
  t.match(docs[1], /storage: \{\{ \.Values\.postgresql\.persistence\.size \| quote \}\}/);
  t.match(docs[1], /- name: POSTGRES_PASSWORD\n\s+valueFrom:\n\s+secretKeyRef:\n\s+name: \{\{ include "vault-standalone\.authSecretName" \. \}\}\n\s+key: postgresql-password/);
  t.notMatch(postgresql, /\.Values\.postgresql\.auth\.password/);
  const { pod, container } = securityContexts(t, docs[1] ?? '');
  assertPod(t, pod, 999);
  assertHardenedContainer(t, container);
  t.match(docs[1], /mountPath: \/var\/run\/postgresql/, 'socket dir writable under a read-only root');
  t.match(docs[1], /mountPath: \/var\/lib\/postgresql\/data/);
  t.match(docs[1], /readinessProbe:\n\s+exec:/);
  t.match(docs[1], /resources:\n\s+\{\{- toYaml \.Values\.postgresql\.resources \| nindent 12 \}\}/);
});

t.test('redis: Deployment without PVC or persistence, requirepass from the Secret, uid 999', async (t) => {
  t.match(redis, /^\{\{- if \.Values\.redis\.enabled \}\}/);
  const docs = documents(redis);
  t.equal(docs.length, 2);
  t.match(docs[0], /^kind: Service$/m);
  t.match(docs[0], /port: 6379/);
  t.match(docs[1], /^kind: Deployment$/m);
  t.notMatch(docs[1], /volumeClaimTemplates|persistentVolumeClaim|\.Values\.redis\.persistence/, 'no volume claim');
  t.match(docs[1], /- name: data\n\s+emptyDir:/);
  // The password: a config file from the chart's Secret (redis-server's first argument), never an argument.
  t.notMatch(docs[1], /requirepass"|REDIS_PASSWORD/, 'no --requirepass, no REDIS_PASSWORD variable');
  t.match(docs[1], /command: \[\{\{ include "vault-standalone\.redis\.server" \. \| quote \}\}\]\n\s+args:\n\s+- "\/etc\/redis-auth\/redis\.conf"/);
  t.match(docs[1], /- name: auth\n\s+mountPath: \/etc\/redis-auth\n\s+readOnly: true/);
  t.match(docs[1], /- name: auth\n\s+secret:\n\s+secretName: \{\{ include "vault-standalone\.authSecretName" \. \}\}\n\s+defaultMode: 0440\n\s+items:\n\s+- key: redis\.conf\n\s+path: redis\.conf/);
  t.match(secret, /redis\.conf: \{\{ printf "requirepass %s\\n" \(include "vault-standalone\.redis\.password" \.\) \| b64enc \| quote \}\}/);
  t.match(docs[1], /\{\{- range list "VALKEYCLI_AUTH" "REDISCLI_AUTH" \}\}\n\s+- name: \{\{ \. \}\}\n\s+valueFrom:\n\s+secretKeyRef:/, 'the probes\' valkey-cli / redis-cli read VALKEYCLI_AUTH / REDISCLI_AUTH');
  t.match(docs[1], /- "--appendonly"\n\s+- "no"/);
  t.match(docs[1], /- "--save"\n\s+- ""/, 'no RDB snapshots');
  t.notMatch(redis, /\.Values\.redis\.auth\.password/);
  t.notMatch(redis, /redis-cli[^\n]*-a /, 'probe does not put the password on a command line');
  const { pod, container } = securityContexts(t, docs[1] ?? '');
  assertPod(t, pod, 999);
  assertHardenedContainer(t, container);
  t.match(docs[1], /resources:\n\s+\{\{- toYaml \.Values\.redis\.resources \| nindent 12 \}\}/);
});

t.test('component labels keep the app, postgresql and redis apart', async (t) => {
  t.match(defineBody(helpers, 'vault-standalone.selectorLabels'), /app\.kubernetes\.io\/component: server/);
  t.match(defineBody(helpers, 'vault-standalone.postgresql.selectorLabels'), /app\.kubernetes\.io\/component: postgresql/);
  t.match(defineBody(helpers, 'vault-standalone.redis.selectorLabels'), /app\.kubernetes\.io\/component: redis/);
  for (const name of ['selectorLabels', 'postgresql.selectorLabels', 'redis.selectorLabels']) {
    t.match(defineBody(helpers, `vault-standalone.${name}`), /app\.kubernetes\.io\/instance: \{\{ \.Release\.Name \}\}/, `${name} is per release`);
  }
});

t.test('network policies: postgresql and redis only from the app pods; app on 8080', async (t) => {
  t.match(networkPolicy, /^\{\{- if \.Values\.networkPolicy\.enabled \}\}/);
  const docs = documents(networkPolicy);
  t.equal(docs.length, 4);
  const byComponent = (c: string) => docs.find((d) => new RegExp(`podSelector:\\n\\s+matchLabels:\\n\\s+\\{\\{- include "vault-standalone\\.${c}" \\. \\| nindent 6 \\}\\}`).test(d));

  const app = byComponent('selectorLabels');
  t.ok(app, 'policy for the app pods');
  t.match(app, /policyTypes:\n\s+- Ingress/);
  t.match(app, /ingress:\n\s+- ports:\n\s+- port: 8080\n\s+protocol: TCP\n\s+\{\{- if \.Values\.metrics\.enabled \}\}\n\s+- from:/, 'the API port from anywhere, the metrics port in a rule of its own');

  for (const [c, port] of [['postgresql', 5432], ['redis', 6379]] as const) {
    const doc = byComponent(`${c}.selectorLabels`);
    t.ok(doc, `policy for ${c}`);
    t.match(doc, /^kind: NetworkPolicy$/m);
    t.match(doc, /policyTypes:\n\s+- Ingress/);
    const ingress = yamlBlocks(doc ?? '', 'ingress');
    t.equal(ingress.length, 1);
    t.match(
      ingress[0]?.body,
      new RegExp(
        `^\\s+- from:\\n\\s+- podSelector:\\n\\s+matchLabels:\\n\\s+\\{\\{- include "vault-standalone\\.selectorLabels" \\. \\| nindent 14 \\}\\}\\n${c === 'postgresql' ? '\\s+\\{\\{- if \\.Values\\.postgresql\\.backup\\.enabled \\}\\}\\n\\s+- podSelector:\\n\\s+matchLabels:\\n\\s+\\{\\{- include "vault-standalone\\.backup\\.selectorLabels" \\. \\| nindent 14 \\}\\}\\n\\s+\\{\\{- end \\}\\}\\n' : ''}\\s+ports:\\n\\s+- port: ${port}\\n\\s+protocol: TCP$`,
      ),
      `${c}: ingress only from the app's pods (PostgreSQL: and its backup Job, when enabled) on ${port}`,
    );
    t.notMatch(doc, /namespaceSelector|ipBlock/, `${c}: no other sources`);
  }
});

t.test('NOTES.txt gives the in-cluster address and hostAPI', async (t) => {
  const notes = tpl('NOTES.txt');
  t.match(notes, /http:\/\/\{\{ \$fullname \}\}\.\{\{ \.Release\.Namespace \}\}\.svc\.cluster\.local:8080\/api/);
  t.match(notes, /\$fullname := include "vault-standalone\.fullname" \./);
});

t.test('template actions are well formed: balanced blocks, known helpers', async (t) => {
  const files = ['_helpers.tpl', 'deployment.yaml', 'service.yaml', 'secret.yaml', 'postgresql.yaml', 'redis.yaml', 'networkpolicy.yaml', 'NOTES.txt'];
  const defined = new Set([...helpers.matchAll(/\{\{-?\s*define\s+"([^"]+)"/g)].map((m) => m[1]));
  for (const file of files) {
    const text = tpl(file);
    const opens = (text.match(/\{\{/g) ?? []).length;
    const closes = (text.match(/\}\}/g) ?? []).length;
    t.equal(opens, closes, `${file}: every {{ has its }}`);
    // Comments may contain anything; drop them before counting block keywords.
    const actions = [...text.replace(/\{\{-?\s*\/\*[\s\S]*?\*\/\s*-?\}\}/g, '').matchAll(/\{\{-?\s*(if|with|range|define|end)\b/g)].map((m) => m[1]);
    const blocks = actions.filter((a) => a !== 'end').length;
    t.equal(actions.filter((a) => a === 'end').length, blocks, `${file}: every if/with/range/define has its end`);
    for (const m of text.matchAll(/include "([^"]+)"/g)) {
      if (m[1]!.startsWith('vault-standalone.')) t.ok(defined.has(m[1]), `${file}: helper ${m[1]} is defined`);
    }
  }
});
