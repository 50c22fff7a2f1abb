// GET /api/v1/projects/slug/:slug: the slug has the limits of every other project ref,
// and a message never carries control characters or an unbounded echo.
import t from 'tap';
import { JSON_TYPE, request } from '../../../helpers/http.js';
import { login, seedHomelab, startTestService, testEnv } from '../../../helpers/service.js';

t.test('project by slug: bounded, no control characters', async (t) => {
  const svc = await startTestService(t, await testEnv(t, 'postgres+redis'));
  const seeded = await seedHomelab(svc.services);
  const token = await login(svc.url, seeded);
  const bySlug = (slug: string) => request(`${svc.url}/api/v1/projects/slug/${slug}`, { token });

  t.test('a 5000-character slug: 422 without the slug in the message', async (t) => {
    const r = await bySlug('a'.repeat(5000));
    t.equal(r.status, 422);
    t.equal(r.contentType, JSON_TYPE);
    t.equal(r.body.error, 'ValidationFailure');
    t.equal(r.body.message, 'slug: slug must be at most 64 characters');
  });

  t.test('control characters: 422, never echoed', async (t) => {
    for (const slug of ['home%00lab', 'home%0Alab', '%1B%5B2J', 'x%7F', `${'a'.repeat(4000)}%00`]) {
      const r = await bySlug(slug);
      t.equal(r.status, 422, slug.slice(0, 20));
      t.equal(r.body.error, 'ValidationFailure');
      t.notMatch(JSON.stringify(r.body), /home|\\u0000|\\n|\\u001b|\\u007f|aaaa/, 'nothing of the slug comes back');
    }
  });

  t.test('a slug within the limits is looked up as before', async (t) => {
    t.equal((await bySlug('homelab')).status, 200);
    const missing = await bySlug('a'.repeat(64));
    t.equal(missing.status, 404);
    t.equal(missing.body.message, `Project with slug '${'a'.repeat(64)}' not found`);
  });
});
