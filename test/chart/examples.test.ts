// The External Secrets Operator examples point at the service the chart creates and
// at the project/environment/path the seed's setup uses.
import t from 'tap';
import { getPath, parseYamlSubset, readRepo, serviceName } from './lib.js';

const chartName = parseYamlSubset(readRepo('chart', 'vault-standalone', 'Chart.yaml')).name as string;
const store = parseYamlSubset(readRepo('chart', 'examples', 'cluster-secret-store.yaml'));
const external = parseYamlSubset(readRepo('chart', 'examples', 'external-secret.yaml'));
const readme = readRepo('chart', 'examples', 'README.md');

const infisical = ['spec', 'provider', 'infisical'];

t.test('ClusterSecretStore: kind and API version', async (t) => {
  t.equal(store.kind, 'ClusterSecretStore');
  t.match(store.apiVersion, /^external-secrets\.io\/(v1|v1beta1)$/);
});

t.test('ClusterSecretStore: scope homelab / prod / "/"', async (t) => {
  t.equal(getPath(store, [...infisical, 'secretsScope', 'projectSlug']), 'homelab');
  t.equal(getPath(store, [...infisical, 'secretsScope', 'environmentSlug']), 'prod');
  t.equal(getPath(store, [...infisical, 'secretsScope', 'secretsPath']), '/');
});

t.test('ClusterSecretStore: Universal Auth from vault-machine-identity in external-secrets', async (t) => {
  for (const [field, key] of [['clientId', 'clientId'], ['clientSecret', 'clientSecret']]) {
    const ref = [...infisical, 'auth', 'universalAuthCredentials', field!];
    t.equal(getPath(store, [...ref, 'name']), 'vault-machine-identity', `${field} Secret name`);
    t.equal(getPath(store, [...ref, 'namespace']), 'external-secrets', `${field} namespace (required for a ClusterSecretStore)`);
    t.equal(getPath(store, [...ref, 'key']), key, `${field} key`);
  }
});

t.test('ClusterSecretStore: hostAPI is the chart service root plus /api', async (t) => {
  const hostAPI = getPath(store, [...infisical, 'hostAPI']) as string;
  const m = /^https:\/\/([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local:8080\/api$/.exec(hostAPI);
  t.ok(m, `hostAPI ends with .svc.cluster.local:8080/api: ${hostAPI}`);
  const [, svc, namespace] = m ?? [];
  t.equal(chartName, 'vault-standalone');
  t.equal(svc, serviceName('vault', chartName), 'service name follows the naming rule (release "vault")');
  t.equal(svc, 'vault-vault-standalone');
  t.equal(namespace, 'vault');
  t.notMatch(hostAPI, /:30445/, 'in-cluster address, not the node port');
});

t.test('ExternalSecret: hourly, all keys, from the store', async (t) => {
  t.equal(external.kind, 'ExternalSecret');
  t.match(external.apiVersion, /^external-secrets\.io\/(v1|v1beta1)$/);
  t.equal(getPath(external, ['spec', 'refreshInterval']), '1h');
  t.equal(getPath(external, ['spec', 'secretStoreRef', 'kind']), 'ClusterSecretStore');
  t.equal(getPath(external, ['spec', 'secretStoreRef', 'name']), getPath(store, ['metadata', 'name']));
  t.type(getPath(external, ['spec', 'target', 'name']), 'string');
  // dataFrom is a list (a leaf for the parser): its one item is a find over every name.
  const dataFrom = getPath(external, ['spec', 'dataFrom']) as string[];
  t.equal(dataFrom.length, 1);
  t.match(dataFrom[0], /^find:\nname:\nregexp: "\.\*"$/);
});

t.test('README: force-sync and helm usage', async (t) => {
  t.match(readme, 'kubectl annotate externalsecret <name> -n <ns> force-sync=$(date +%s) --overwrite');
  t.match(readme, 'helm lint chart/vault-standalone');
  t.match(readme, /helm template vault chart\/vault-standalone [^\n]*-f values\.yaml/);
  t.match(readme, 'vault-vault-standalone');
});
