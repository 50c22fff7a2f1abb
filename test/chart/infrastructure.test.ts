// The deployment-tool half: the Argo CD Application and the Terraform sketch that
// creates it and the bootstrap Secrets from the file generate-bootstrap writes. No
// terraform providers or cluster here: the files are read and cross-checked against
// the chart, the ESO manifests and the CLI's own output.
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { generateBootstrapValues, render } from '../../server/cli/generateBootstrap.js';
import {
  getPath,
  hclAttrs,
  hclBlocks,
  hclEntries,
  hclObjectLeaves,
  hclString,
  parseYamlSubset,
  readRepo,
  schemaAt,
  serviceName,
  type Schema,
} from './lib.js';

const chart = parseYamlSubset(readRepo('chart', 'vault-standalone', 'Chart.yaml'));
const values = parseYamlSubset(readRepo('chart', 'vault-standalone', 'values.yaml'));
const schema = JSON.parse(readRepo('chart', 'vault-standalone', 'values.schema.json')) as Schema;
const store = parseYamlSubset(readRepo('chart', 'examples', 'cluster-secret-store.yaml'));
const application = parseYaml(readRepo('chart', 'examples', 'application.yaml')) as Record<string, unknown>;
const mainTf = readRepo('chart', 'examples', 'terraform', 'main.tf');
const variablesTf = readRepo('chart', 'examples', 'terraform', 'variables.tf');

const variables = new Map(hclBlocks(variablesTf, 'variable').map((b) => [b.labels[0]!, b.body]));
const resources = hclBlocks(mainTf, 'resource');
const resource = (type: string, name: string) => resources.find((r) => r.labels[0] === type && r.labels[1] === name);
const defaultOf = (name: string) => hclString(hclAttrs(variables.get(name) ?? '').default);
const locals = Object.assign({}, ...hclBlocks(mainTf, 'locals').map((b) => hclAttrs(b.body))) as Record<string, string>;

/** The names (in order) and values of the tfvars file the CLI writes. */
function cliTfvars(): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of hclEntries(render('tfvars', generateBootstrapValues()))) {
    if (e.kind === 'attr') out.set(e.name, hclString(e.value)!);
  }
  return out;
}

const hostAPI = getPath(store, ['spec', 'provider', 'infisical', 'hostAPI']) as string;
const [, storeService, storeNamespace] = /^https?:\/\/([a-z0-9-]+)\.([a-z0-9-]+)\.svc/.exec(hostAPI) ?? [];

t.test('HCL reader', async (t) => {
  const entries = hclEntries('# c\nvariable "a" {\n  default = "x{" # y\n  v {\n  }\n}\nb = {\n  c = { d = var.e }\n}\n');
  t.same(entries.map((e) => (e.kind === 'block' ? [e.type, ...e.labels] : [e.name])), [['variable', 'a'], ['b']]);
  t.equal(hclString(hclAttrs((entries[0] as { body: string }).body).default), 'x{', 'braces inside strings do not count');
  t.same(hclObjectLeaves((entries[1] as { value: string }).value), { 'c.d': 'var.e' });
  t.equal(hclString('"${x}"'), undefined, 'an interpolation is not a plain string');
  t.throws(() => hclEntries('a {\n'), /unbalanced/);
});

t.test('Application: the chart vault-standalone at the chart version, release vault in namespace vault', async (t) => {
  t.equal(application.apiVersion, 'argoproj.io/v1alpha1');
  t.equal(application.kind, 'Application');
  const source = getPath(application, ['spec', 'source']) as Record<string, unknown>;
  t.equal(source.chart, chart.name, 'chart name from Chart.yaml');
  t.equal(source.chart, 'vault-standalone');
  t.equal(source.targetRevision, chart.version, 'targetRevision is the chart version');
  t.equal(source.targetRevision, '2.0.0');
  t.match(source.repoURL, /REPLACE_ME/, 'the repository is a marked placeholder');
  const release = getPath(source, ['helm', 'releaseName']) as string;
  const namespace = getPath(application, ['spec', 'destination', 'namespace']);
  t.equal(serviceName(release, chart.name as string), storeService, 'release + chart name twice is the Service in hostAPI');
  t.equal(namespace, storeNamespace, 'deployed into the namespace hostAPI names');
  t.equal(namespace, 'vault');
});

t.test('Application: no real values in git; the database volume is never pruned', async (t) => {
  const helmValues = getPath(application, ['spec', 'source', 'helm', 'values']) as string;
  t.type(helmValues, 'string');
  t.same(parseYaml(helmValues), null, 'the committed values blob is empty (a comment only)');
  t.notMatch(readRepo('chart', 'examples', 'application.yaml'), /\b[0-9a-f]{24,}\b/, 'no hex value anywhere');
  t.equal(getPath(application, ['spec', 'syncPolicy', 'automated', 'prune']), false);
});

t.test('Terraform variables: exactly the names generate-bootstrap writes, sensitive, validated', async (t) => {
  const written = cliTfvars();
  t.same([...written.keys()].sort(), ['auth_secret', 'encryption_key', 'postgresql_password', 'redis_password']);
  for (const [name, value] of written) {
    const body = variables.get(name);
    t.ok(body, `variable "${name}" is declared`);
    const attrs = hclAttrs(body ?? '');
    t.equal(attrs.sensitive, 'true', `${name} is sensitive`);
    t.equal(attrs.default, undefined, `${name} has no default: it must come from the file`);
    // The validation's regex accepts what the CLI writes and refuses an empty value.
    const validation = hclBlocks(body ?? '', 'validation')[0];
    const condition = hclAttrs(validation?.body ?? '').condition ?? '';
    const m = new RegExp(`^can\\(regex\\(("(?:[^"\\\\]|\\\\.)*"), var\\.${name}\\)\\)$`).exec(condition);
    t.ok(m, `${name}: validation is can(regex(..., var.${name}))`);
    const re = new RegExp(JSON.parse(m?.[1] ?? '""') as string);
    t.ok(re.test(value), `${name}: the generated value passes the validation`);
    t.notOk(re.test(''), `${name}: an empty value fails it`);
  }
  const required = [...variables].filter(([, body]) => hclAttrs(body).default === undefined).map(([n]) => n);
  t.same(required.sort(), [...written.keys(), 'chart_repository', 'image_repository'].sort(), 'nothing else is required');
});

t.test('Terraform: every variable used is declared and every declared one is used', async (t) => {
  const used = new Set([...mainTf.matchAll(/\bvar\.([a-z_]+)/g)].map((m) => m[1]!));
  t.same([...used].sort(), [...variables.keys()].sort());
});

t.test('Terraform: Secret vault-secrets (service namespace) with ENCRYPTION_KEY and AUTH_SECRET', async (t) => {
  const r = resource('kubernetes_secret_v1', 'vault_secrets');
  t.ok(r);
  const meta = hclAttrs(hclBlocks(r?.body ?? '', 'metadata')[0]?.body ?? '');
  t.equal(hclString(meta.name), 'vault-secrets');
  t.equal(hclString(meta.name), getPath(values, ['secrets', 'existingSecret']), "the chart's secrets.existingSecret");
  t.equal(meta.namespace, 'kubernetes_namespace_v1.service.metadata[0].name');
  const ns = resource('kubernetes_namespace_v1', 'service');
  t.equal(hclAttrs(hclBlocks(ns?.body ?? '', 'metadata')[0]?.body ?? '').name, 'var.service_namespace');
  t.equal(defaultOf('service_namespace'), storeNamespace, 'the default service namespace is the one hostAPI names');
  t.same(hclObjectLeaves(hclAttrs(r?.body ?? '').data ?? '{}'), { ENCRYPTION_KEY: 'var.encryption_key', AUTH_SECRET: 'var.auth_secret' });
});

t.test('Terraform: Secret vault-helm-secrets (deployment tool namespace) holds the Helm values blob', async (t) => {
  const r = resource('kubernetes_secret_v1', 'vault_helm_secrets');
  t.ok(r);
  const meta = hclAttrs(hclBlocks(r?.body ?? '', 'metadata')[0]?.body ?? '');
  t.equal(hclString(meta.name), 'vault-helm-secrets');
  t.equal(meta.namespace, 'var.deployment_tool_namespace');
  t.equal(defaultOf('deployment_tool_namespace'), getPath(application, ['metadata', 'namespace']), "the Application's namespace");
  t.same(hclObjectLeaves(hclAttrs(r?.body ?? '').data ?? '{}'), { 'values.yaml': 'local.helm_values' });

  const blob = /^yamlencode\(([\s\S]*)\)$/.exec(locals.helm_values ?? '');
  t.ok(blob, 'helm_values is yamlencode({...})');
  const leaves = hclObjectLeaves(blob?.[1] ?? '{}');
  t.equal(leaves['postgresql.auth.password'], 'var.postgresql_password');
  t.equal(leaves['redis.auth.password'], 'var.redis_password');
  t.equal(leaves['secrets.existingSecret'], 'kubernetes_secret_v1.vault_secrets.metadata[0].name');
  for (const path of Object.keys(leaves)) {
    t.not(getPath(values, path.split('.')), undefined, `${path} is a value of the chart`);
    t.ok(schemaAt(schema, path.split('.')), `${path} is in values.schema.json`);
  }
  t.notOk(Object.values(leaves).some((v) => /encryption_key|auth_secret/.test(v)), 'the root key never goes into Helm values');
});

t.test('Terraform: Secret vault-machine-identity (operator namespace) as the ClusterSecretStore reads it', async (t) => {
  const r = resource('kubernetes_secret_v1', 'vault_machine_identity');
  t.ok(r);
  const meta = hclAttrs(hclBlocks(r?.body ?? '', 'metadata')[0]?.body ?? '');
  const creds = ['spec', 'provider', 'infisical', 'auth', 'universalAuthCredentials'];
  for (const field of ['clientId', 'clientSecret']) {
    t.equal(hclString(meta.name), getPath(store, [...creds, field, 'name']), `${field}: Secret name`);
    t.equal(defaultOf('operator_namespace'), getPath(store, [...creds, field, 'namespace']), `${field}: namespace`);
  }
  t.equal(hclString(meta.name), 'vault-machine-identity');
  t.equal(meta.namespace, 'var.operator_namespace');
  const data = hclObjectLeaves(hclAttrs(r?.body ?? '').data ?? '{}');
  t.same(data, {
    [getPath(store, [...creds, 'clientId', 'key']) as string]: 'var.machine_identity_client_id',
    [getPath(store, [...creds, 'clientSecret', 'key']) as string]: 'var.machine_identity_client_secret',
  });
});

t.test('Terraform: the Application is application.yaml with the placeholders filled in', async (t) => {
  t.equal(locals.application, 'yamldecode(file("${path.module}/../application.yaml"))');
  const r = resource('kubernetes_manifest', 'vault_application');
  t.ok(r);
  const manifest = hclAttrs(r?.body ?? '').manifest ?? '';
  t.match(manifest, /repoURL\s+= var\.chart_repository/);
  t.match(manifest, /targetRevision = var\.chart_version/);
  t.match(manifest, /values = kubernetes_secret_v1\.vault_helm_secrets\.data\["values\.yaml"\]/);
  t.match(manifest, /namespace = kubernetes_namespace_v1\.service\.metadata\[0\]\.name/);
  t.equal(defaultOf('chart_version'), getPath(application, ['spec', 'source', 'targetRevision']), 'chart_version default');
  t.match(hclAttrs(r?.body ?? '').depends_on, /kubernetes_secret_v1\.vault_secrets/, 'vault-secrets exists before the first start');
});

t.test('docs/operations.md section 1: image and chart pushed, the CLI run from the image', async (t) => {
  const ops = readRepo('docs', 'operations.md');
  const section = ops.slice(ops.indexOf('## 1. First-time setup'), ops.indexOf('## 2.'));
  t.match(section, /docker build --platform linux\/amd64 -t \$REGISTRY\/vault-standalone:(\S+) \./);
  t.match(section, /docker push \$REGISTRY\/vault-standalone:/);
  t.match(section, 'helm package chart/vault-standalone');
  t.match(section, `helm push vault-standalone-${chart.version}.tgz oci://$REGISTRY/charts`, 'the packaged file name carries the chart version');
  const tag = /docker push \$REGISTRY\/vault-standalone:(\S+)/.exec(section)?.[1];
  t.equal(tag, chart.appVersion, "the image tag is the chart's appVersion");

  // The CLI inside the image: WORKDIR + the package's bin entry.
  const dockerfile = readRepo('Dockerfile');
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  const workdir = /^WORKDIR (\S+)$/m.exec(runtime)?.[1];
  const bin = (JSON.parse(readRepo('package.json')) as { bin: Record<string, string> }).bin['vault-standalone'];
  t.match(runtime, /^COPY --from=build \/app\/dist \.\/dist$/m, 'dist is copied into the WORKDIR');
  const cliInImage = `${workdir}/${bin}`;
  t.equal(cliInImage, '/app/dist/server/cli/main.js');
  t.match(section, `node ${cliInImage} generate-bootstrap`, 'docker run uses the CLI path of the image');
  t.match(section, /docker run --rm --network none --user "\$\(id -u\):\$\(id -g\)" -v "\$PWD:\/work" -w \/work/);
});

t.test('README.md: the layout names the deployment files and links the operations guide', async (t) => {
  const readme = readRepo('README.md');
  const layout = readme.slice(readme.indexOf('## Layout'));
  for (const entry of ['chart/', 'docs/', 'Dockerfile', 'server/cli/']) t.match(layout, `| \`${entry}\` |`, `layout row for ${entry}`);
  t.match(readme, '[docs/operations.md](docs/operations.md)', 'a working relative link');
});
