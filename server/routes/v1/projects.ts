// GET /api/v1/projects/slug/:slug — clients that know a slug ask for the ids here.
import { z } from 'zod';
import type { Router } from '../../http/types.js';
import type { Services } from '../../services.js';
import { boundedName, parse } from '../input.js';

// The limits of every other project ref: the slug is echoed in the 404 message.
const params = z.object({ slug: boundedName('slug', 64) });

export function registerProjectRoutes(router: Router, svc: Services) {
  router.get('/api/v1/projects/slug/:slug', async (req) => {
    const actor = await svc.auth.actor(req);
    const { slug } = parse(params, req.params);
    const { project } = await svc.access.authorize(actor, { slug }, 'secrets:read');
    return {
      body: {
        id: project.id,
        _id: project.id,
        name: project.name,
        slug: project.slug,
        orgId: project.orgId,
        version: 3,
        environments: project.environments.map((e) => ({ id: e.id, name: e.name, slug: e.slug })),
        createdAt: project.createdAt.toISOString(),
        updatedAt: project.updatedAt.toISOString(),
      },
    };
  });
}
