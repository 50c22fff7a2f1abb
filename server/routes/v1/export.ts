// GET /api/v1/projects/:projectId/export?environment&secretPath&format=json|csv — this
// service's own: one environment and folder as a download, for project admins. The
// domain records it in the audit trail before anything is handed out.
import { z } from 'zod';
import type { SecretExport } from '../../domain/export.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';

const exportQuery = z.object({
  environment: z.string({ error: 'environment is required' }).min(1).max(64),
  secretPath: z.string().max(1024).optional(),
  format: z.enum(['json', 'csv'], { error: 'format must be "json" or "csv"' }).default('json'),
});

/**
 * A cell a spreadsheet would run as a formula (it starts with =, +, -, @, a tab or a CR)
 * gets a leading apostrophe, as OWASP recommends against CSV injection: an admin opening
 * the export in a spreadsheet sees the text, nothing runs. The JSON export stays exact.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

const exportSchema = z.object({
  project: z.object({ id: z.string(), slug: z.string() }),
  environment: z.string(),
  secretPath: z.string(),
  exportedAt: z.string(),
  secrets: z.array(z.object({ key: z.string(), value: z.string(), comment: z.string() })),
});

/** RFC 4180: a field holding a comma, quote, CR or LF is quoted, quotes doubled. */
export function csvField(s: string): string {
  const safe = FORMULA_START.test(s) ? `'${s}` : s;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

export function toCsv(e: SecretExport): string {
  const lines = ['key,value,comment'];
  for (const x of e.entries) lines.push(`${csvField(x.key)},${csvField(x.value)},${csvField(x.comment)}`);
  return `${lines.join('\r\n')}\r\n`;
}

export function toJson(e: SecretExport, exportedAt: Date): string {
  return JSON.stringify({
    project: e.project,
    environment: e.environment,
    secretPath: e.path,
    exportedAt: exportedAt.toISOString(),
    secrets: e.entries.map((x) => ({ key: x.key, value: x.value, comment: x.comment })),
  });
}

/** A file name made only of safe characters: project, environment and path. */
function fileName(e: SecretExport, ext: string): string {
  const path = e.path === '/' ? 'root' : e.path.slice(1).replaceAll('/', '_');
  return `${e.project.slug}-${e.environment}-${path}`.replace(/[^A-Za-z0-9._-]/g, '_') + `.${ext}`;
}

export function registerExportRoutes(api: Api, svc: Services) {
  api.get(
    '/api/v1/projects/:projectId/export',
    {
      caller: 'any',
      summary: 'One environment and folder as a JSON or CSV download (project admins; audited)',
      query: exportQuery,
      response: exportSchema,
      alsoProduces: ['text/csv'],
    },
    async ({ actor, params, query: q, origin }) => {
      const e = await svc.exports.exportSecrets(actor, { project: { id: params.projectId }, environment: q.environment, secretPath: q.secretPath, format: q.format, origin });
      const csv = q.format === 'csv';
      return {
        raw: true,
        body: csv ? toCsv(e) : toJson(e, new Date()),
        headers: {
          'Content-Type': csv ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8',
          'Content-Disposition': `attachment; filename="${fileName(e, q.format)}"`,
        },
      };
    },
  );
}
