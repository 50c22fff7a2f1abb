// Accessibility on every screen (issue 32 point 8): axe-core 4, the engine the review used,
// injected into the real page, in light and dark. Any violation fails with its rule, its
// impact and the elements it names. Also checks the account link's name and the dark theme's
// button contrast that axe reported.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { Page } from 'playwright-core';
import { ROOT } from '../chart/lib.js';
import { browser, browserTest, homelabService, loginThroughUi, newPage } from './helpers.js';

const AXE = readFileSync(join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

interface Violation {
  id: string;
  impact: string | null;
  nodes: string[];
}

/** axe's violations on the page as it is now (its default rules: WCAG 2.x A/AA and best practices). */
async function violations(page: Page): Promise<Violation[]> {
  await page.addScriptTag({ content: AXE });
  return page.evaluate(async () => {
    const axe = (globalThis as any).axe;
    const r = await axe.run((globalThis as any).document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 5).map((n: any) => `${n.target.join(' ')}: ${n.failureSummary}`) }));
  });
}

browserTest(t, 'axe-core: 0 violations on every screen, light and dark', async (t) => {
  const { svc, seeded } = await homelabService(t);
  const b = await browser(t);
  const P = seeded.projectId;
  const screens: [string, string, string][] = [
    ['projects', '/projects', 'Projects'],
    ['secrets', `/projects/${P}/secrets?env=prod`, 'homelab'],
    ['members', `/projects/${P}/members`, 'Add a member'],
    ['roles', `/projects/${P}/roles`, 'Custom roles'],
    ['audit', `/projects/${P}/audit`, 'Audit trail'],
    ['settings', `/projects/${P}/settings`, 'General'],
    ['identities', '/identities', 'Machine identities'],
    ['identity', `/identities/${seeded.identityId}`, 'homelab-eso'],
    ['people', '/people', 'People'],
    ['account', '/account', 'My account'],
  ];
  for (const colorScheme of ['light', 'dark'] as const) {
    // The UI's Content-Security-Policy refuses inline scripts: axe is injected past it.
    const { page } = await newPage(t, { colorScheme, bypassCSP: true }, b);
    await page.goto(svc.url);
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    t.same(await violations(page), [], `${colorScheme}: login`);
    await loginThroughUi(page, svc.url);
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    t.equal(await page.getByRole('link', { name: 'My account: admin@example.test' }).count(), 1, 'the account link is named by what it shows');
    for (const [name, path, heading] of screens) {
      await page.goto(`${svc.url}${path}`);
      await page.getByRole('heading', { name: heading }).first().waitFor();
      await page.waitForFunction(() => (globalThis as any).document.querySelector('.spinner') === null);
      t.same(await violations(page), [], `${colorScheme}: ${name}`);
    }
    // A dialog and the bulk paste's error list.
    await page.goto(`${svc.url}/projects/${P}/secrets?env=prod`);
    await page.getByRole('button', { name: 'Bulk paste' }).click();
    const bulk = page.getByRole('dialog', { name: 'Bulk paste' });
    await bulk.getByLabel('KEY=value lines').fill('not a line\n=empty key');
    await bulk.getByRole('alert').locator('ul > li').first().waitFor();
    t.equal(await bulk.getByRole('alert').getByRole('list').count(), 1, 'the errors are a list inside the alert');
    t.same(await violations(page), [], `${colorScheme}: bulk paste with errors`);
    // The check can fail: a visible button with no name, added to a plain screen, is reported.
    await page.goto(`${svc.url}/projects`);
    await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor();
    await page.evaluate(() => {
      const d = (globalThis as any).document;
      const b = d.createElement('button');
      b.setAttribute('data-probe', 'unnamed');
      d.body.append(b);
    });
    t.ok((await violations(page)).some((v) => v.id === 'button-name'), `${colorScheme}: an unnamed button is reported`);
  }
});
