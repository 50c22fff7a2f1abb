// The inventory file: which keys a project environment must hold and the rule each
// value follows. JSON (no YAML parser is a dependency), validated with zod.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { validateSecretName } from '../domain/secrets.js';
import { CliError } from './command.js';
import { RULES } from './rules.js';

const entry = z
  .object({
    key: z.string().min(1),
    rule: z.enum(RULES),
    immutable: z.boolean().optional(),
    /** Stored as the secret's comment, shown in the UI. */
    note: z.string().max(1000).optional(),
    /** Only for rule external: the value stored until the real one is set. */
    placeholder: z.string().min(1).max(1000).optional(),
  })
  .strict()
  .superRefine((e, ctx) => {
    try {
      if (validateSecretName(e.key) !== e.key) throw new Error();
    } catch {
      ctx.addIssue({ code: 'custom', path: ['key'], message: `invalid secret name ${JSON.stringify(e.key)}` });
    }
    if (e.placeholder !== undefined && e.rule !== 'external') {
      ctx.addIssue({ code: 'custom', path: ['placeholder'], message: 'placeholder is only for rule "external"' });
    }
  });

export const inventorySchema = z
  .object({
    $comment: z.string().optional(),
    description: z.string().optional(),
    project: z.string().min(1).optional(),
    environment: z.string().min(1).optional(),
    path: z.string().min(1).optional(),
    secrets: z.array(entry).min(1),
  })
  .strict()
  .superRefine((inv, ctx) => {
    const seen = new Set<string>();
    inv.secrets.forEach((s, i) => {
      if (seen.has(s.key)) ctx.addIssue({ code: 'custom', path: ['secrets', i, 'key'], message: `duplicate key ${s.key}` });
      seen.add(s.key);
    });
  });

export type Inventory = z.infer<typeof inventorySchema>;
export type InventoryEntry = Inventory['secrets'][number];

export async function loadInventory(file: string): Promise<Inventory> {
  let text: string;
  try {
    // '-': standard input (e.g. piped into `kubectl exec -i`).
    text = file === '-' ? readFileSync(0, 'utf8') : await readFile(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read the inventory ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new CliError(`the inventory ${file} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = inventorySchema.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.slice(0, 10).map((i) => `  ${i.path.join('.') || '(file)'}: ${i.message}`);
    throw new CliError(`the inventory ${file} is not valid:\n${lines.join('\n')}`);
  }
  return parsed.data;
}
