// Tag links as a folder snapshot reads them: by folder, beside the folder's rows, so
// they hold exactly the links of the folders asked for.
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { BACKENDS, seedHomelab, startTestService, testEnv } from '../helpers/service.js';

for (const backend of BACKENDS) {
  t.test(`linksOfFolders (${backend})`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend));
    const { store, folders, secrets } = svc.services;
    const seeded = await seedHomelab(svc.services);
    const project = { id: seeded.projectId };
    await folders.create(SYSTEM, { project, environment: 'prod', parentPath: '/', name: 'app' });
    await secrets.createMany(SYSTEM, { project, environment: 'prod', secretPath: '/app', secrets: [{ key: 'IN_APP', value: 'v' }, { key: 'ALSO_IN_APP', value: 'w' }] });
    const env = (await store.projects.byId(seeded.projectId))!.environments.find((e) => e.slug === 'prod')!;
    const root = (await store.folders.byPath(env.id, '/'))!;
    const app = (await store.folders.byPath(env.id, '/app'))!;
    const rootRows = await store.secrets.listByFolders([root.id]);
    const appRows = await store.secrets.listByFolders([app.id]);
    const [red, blue] = await Promise.all(['red', 'blue'].map((slug) => store.secretTags.insert({ projectId: seeded.projectId, slug, color: null })));
    await store.secretTags.setLinks(rootRows[0]!.id, [red!.id, blue!.id]);
    await store.secretTags.setLinks(rootRows[1]!.id, [blue!.id]);
    await store.secretTags.setLinks(appRows[0]!.id, [red!.id]);

    const sorted = (m: Map<string, string[]>) => new Map([...m].map(([k, v]) => [k, [...v].sort()]));
    t.same(
      sorted(await store.secretTags.linksOfFolders([root.id])),
      new Map([
        [rootRows[0]!.id, [red!.id, blue!.id].sort()],
        [rootRows[1]!.id, [blue!.id]],
      ]),
      "the root's links only, each secret with all of its tags",
    );
    t.same(await store.secretTags.linksOfFolders([app.id]), new Map([[appRows[0]!.id, [red!.id]]]), "the sub-folder's only");
    t.equal((await store.secretTags.linksOfFolders([root.id, app.id])).size, 3, 'both folders together');
    t.equal((await store.secretTags.linksOfFolders([])).size, 0, 'no folder: none');
    t.same(
      sorted(await store.secretTags.linksOfFolders([root.id])),
      sorted(await store.secretTags.linksOf(rootRows.map((r) => r.id))),
      'the same as asking by the secret ids',
    );
  });
}
