// Every Kubernetes workload the documentation tells an operator to apply runs as
// hardened as the chart's own Deployment, and no document puts a secret on a kubectl
// command line (where `ps` and the shell history keep it).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { isMap, readRepo, ROOT, yamlBlocks } from './lib.js';

interface CodeBlock {
  file: string;
  line: number;
  lang: string;
  text: string;
}

/** Fenced code blocks of a Markdown text, also inside list items (dedented by the fence's indentation). */
function codeBlocks(file: string, markdown: string): CodeBlock[] {
  const lines = markdown.split('\n');
  const out: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !new RegExp(`^${indent}\`\`\`\\s*$`).test(lines[j]!); j++) {
      body.push(lines[j]!.startsWith(indent) ? lines[j]!.slice(indent.length) : lines[j]!.trimStart());
    }
    if (j === lines.length) throw new Error(`${file}:${i + 1}: unclosed code block`);
    out.push({ file, line: i + 1, lang: open[2]!, text: body.join('\n') });
    i = j;
  }
  return out;
}

const MARKDOWN = ['docs/operations.md', 'chart/examples/README.md', 'README.md'];
const EXAMPLES = readdirSync(join(ROOT, 'chart', 'examples'))
  .filter((f) => /\.ya?ml$/.test(f))
  .map((f) => `chart/examples/${f}`);

/** Every YAML document to check: the YAML code blocks of the guides and the example files. */
function yamlSources(): { where: string; text: string }[] {
  const out: { where: string; text: string }[] = [];
  for (const file of MARKDOWN) {
    for (const b of codeBlocks(file, readRepo(file))) {
      if (b.lang === 'yaml' || b.lang === 'yml') out.push({ where: `${file}:${b.line}`, text: b.text });
    }
  }
  for (const file of EXAMPLES) out.push({ where: file, text: readRepo(file) });
  return out;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (isMap(v) ? (v as Obj) : {});

/** The pod spec of a workload manifest, or undefined for other kinds. */
function podSpec(m: Obj): Obj | undefined {
  const spec = obj(m.spec);
  switch (m.kind) {
    case 'Pod':
      return spec;
    case 'Deployment':
    case 'StatefulSet':
    case 'DaemonSet':
    case 'ReplicaSet':
    case 'Job':
      return obj(obj(spec.template).spec);
    case 'CronJob':
      return obj(obj(obj(obj(spec.jobTemplate).spec).template).spec);
    default:
      return undefined;
  }
}

/** The chart Deployment's pod and container security contexts (plain YAML inside the template). */
function chartSecurityContexts(): { pod: unknown; container: unknown } {
  const blocks = yamlBlocks(readRepo('chart', 'vault-standalone', 'templates', 'deployment.yaml'), 'securityContext');
  if (blocks.length !== 2) throw new Error(`expected 2 securityContext blocks in the Deployment, found ${blocks.length}`);
  const parse = (b: { body: string }) => {
    const indent = Math.min(...b.body.split('\n').map((l) => l.length - l.trimStart().length));
    return parseYaml(b.body.split('\n').map((l) => l.slice(indent)).join('\n')) as unknown;
  };
  return { pod: parse(blocks[0]!), container: parse(blocks[1]!) };
}

const manifests: { where: string; doc: Obj }[] = [];
t.test('every YAML block and example parses; the Kubernetes manifests among them', async (t) => {
  for (const src of yamlSources()) {
    const docs = parseAllDocuments(src.text);
    for (const d of docs) {
      t.same(d.errors.map((e) => e.message), [], `${src.where}: valid YAML`);
      const value = d.toJSON() as unknown;
      if (isMap(value) && typeof value.apiVersion === 'string' && typeof value.kind === 'string') {
        manifests.push({ where: `${src.where} (${value.kind})`, doc: value as Obj });
      }
    }
  }
  const kinds = manifests.map((m) => m.doc.kind).sort();
  t.same(kinds, ['Application', 'ClusterSecretStore', 'CronJob', 'ExternalSecret', 'Job', 'Role', 'RoleBinding', 'ServiceAccount'], 'the manifests found');
});

t.test('every workload has the chart\'s pod and container hardening', async (t) => {
  const chart = chartSecurityContexts();
  // The brief's list, so that a weakened chart cannot weaken the docs unnoticed.
  t.match(chart.pod, { runAsNonRoot: true, runAsUser: 1001, seccompProfile: { type: 'RuntimeDefault' } }, 'chart pod context');
  t.match(chart.container, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } }, 'chart container context');

  const workloads = manifests.filter((m) => podSpec(m.doc) !== undefined);
  t.ok(workloads.length >= 1, 'the rotation Job is found');
  for (const { where, doc } of workloads) {
    const pod = podSpec(doc)!;
    t.same(pod.securityContext, chart.pod, `${where}: pod securityContext as the chart's`);
    const volumes = new Map(((pod.volumes as Obj[] | undefined) ?? []).map((v) => [v.name as string, v]));
    const containers = [...((pod.containers as Obj[] | undefined) ?? []), ...((pod.initContainers as Obj[] | undefined) ?? [])];
    t.ok(containers.length >= 1, `${where}: has containers`);
    for (const c of containers) {
      const name = `${where} container ${String(c.name)}`;
      t.same(c.securityContext, chart.container, `${name}: securityContext as the chart's`);
      const sc = obj(c.securityContext);
      t.equal(sc.allowPrivilegeEscalation, false, `${name}: allowPrivilegeEscalation false`);
      t.same(obj(sc.capabilities).drop, ['ALL'], `${name}: drops ALL capabilities`);
      t.equal(sc.readOnlyRootFilesystem, true, `${name}: read-only root filesystem`);
      // With a read-only root, /tmp must be a writable emptyDir, as in the chart.
      const tmp = ((c.volumeMounts as Obj[] | undefined) ?? []).find((m) => m.mountPath === '/tmp');
      t.ok(tmp && isMap(volumes.get(tmp.name as string)?.emptyDir), `${name}: /tmp is an emptyDir`);
    }
    t.equal(pod.automountServiceAccountToken, false, `${where}: no service account token`);
  }
});

t.test('no secret on a kubectl command line: Secrets are created from files', async (t) => {
  const files = [...MARKDOWN, ...EXAMPLES];
  let creates = 0;
  for (const file of files) {
    const text = readRepo(file);
    t.notMatch(text, /--from-literal/, `${file}: no --from-literal`);
    // Each `kubectl ... create secret generic` command, continuation lines joined.
    const joined = text.replace(/\\\n[#\s]*/g, ' ');
    for (const m of joined.matchAll(/create secret generic [^\n]*/g)) {
      creates++;
      t.match(m[0], /--from-env-file=\S+/, `${file}: ${m[0].slice(0, 60)}… reads an env file`);
    }
  }
  t.ok(creates >= 3, 'vault-secrets, vault-rotation and vault-machine-identity are all shown');
});
