// Real-browser tests: Debian's headless Chromium driven by playwright-core, against the
// real service (in-process, ephemeral port) serving the built UI (ui/dist).
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { ROOT } from '../chart/lib.js';

export const CHROMIUM = '/usr/bin/chromium';
export const ARTIFACTS = join(ROOT, 'test-artifacts', 'ui');

interface TapLike {
  teardown(fn: () => unknown): void;
  fail(msg: string): void;
}

/** Why the browser tests cannot run here, or undefined when they can. */
export function missingPrerequisite(): string | undefined {
  if (!existsSync(CHROMIUM)) return `${CHROMIUM} is missing (apt-get install -y chromium)`;
  if (!existsSync(join(ROOT, 'ui', 'dist', 'index.html'))) return 'ui/dist is not built (npm run build)';
  return undefined;
}

/** One browser per test (closed when the test ends); launching takes well under a second. */
export async function browser(t: TapLike): Promise<Browser> {
  const b = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  t.teardown(() => b.close());
  return b;
}

/**
 * A fresh context (its own cookies and storage) and page. Fails the test on any
 * Content-Security-Policy violation or uncaught page error. With `shared`, the context
 * is opened in that browser (one browser for a whole file) instead of a new one.
 */
export async function newPage(t: TapLike, opts: BrowserContextOptions = {}, shared?: Browser): Promise<{ context: BrowserContext; page: Page }> {
  const b = shared ?? (await browser(t));
  const context = await b.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 860 }, ...opts });
  t.teardown(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on('console', (msg) => {
    if (/Content Security Policy|Refused to (execute|apply|load)/i.test(msg.text())) t.fail(`CSP violation: ${msg.text()}`);
  });
  page.on('pageerror', (err) => t.fail(`page error: ${err.message}`));
  return { context, page };
}

export async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

export const ADMIN = { email: 'admin@example.test', password: 'a long admin password 42', firstName: 'Ada', lastName: 'Admin' };

/** Creates the superadmin over the API (for tests that start after set-up). */
export async function signupOverApi(url: string): Promise<void> {
  const res = await fetch(`${url}/api/v1/admin/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(ADMIN),
  });
  if (res.status !== 200) throw new Error(`signup failed: ${res.status} ${await res.text()}`);
}

export async function loginThroughUi(page: Page, url: string, password = ADMIN.password): Promise<void> {
  await page.goto(url);
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
  await page.getByLabel('Email').fill(ADMIN.email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}
