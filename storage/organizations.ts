// The instance has one organization; it holds projects and machine identities.
import { randomUUID } from 'node:crypto';
import type { Queryable } from './db.js';

export interface OrganizationRow {
  id: string;
  name: string;
  slug: string;
}

export function organizationsStore(sql: Queryable) {
  return {
    /** The instance's organization, created on first use. */
    async ensureDefault(): Promise<OrganizationRow> {
      await sql`insert into organizations (id, name, slug) values (${randomUUID()}, 'Default', 'default')
        on conflict (slug) do nothing`;
      const [row] = await sql<OrganizationRow[]>`select id, name, slug from organizations where slug = 'default'`;
      return row!;
    },
  };
}
export type OrganizationsStore = ReturnType<typeof organizationsStore>;
