// Real-browser tests: Debian's headless Chromium driven by playwright-core, against the
// real service (in-process, ephemeral port) serving the built UI (ui/dist).
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Locator, type Page } from 'playwright-core';
import type { Test } from 'tap';
import { ROOT } from '../chart/lib.js';
import { seedHomelab, startTestService, testEnv, type Seeded, type TestService } from '../helpers/service.js';

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

/**
 * A browser test: `t.test` skipped, with the reason, on a developer machine that lacks a
 * prerequisite; in CI (CI=true) a missing prerequisite fails it instead.
 */
export function browserTest(parent: Test, name: string, fn: (t: Test) => Promise<unknown>): void {
  const missing = missingPrerequisite();
  const skip = missing && process.env.CI !== 'true' ? `browser tests: ${missing}` : false;
  parent.test(name, { skip }, async (t) => {
    if (missing) return t.fail(missing);
    await fn(t);
  });
}

/** The service (embedded database, closed when the test ends) with the superadmin signed up and homelab seeded. */
export async function homelabService(t: Test): Promise<{ svc: TestService; seeded: Seeded }> {
  const svc = await startTestService(t, await testEnv(t, 'embedded'));
  await signupOverApi(svc.url);
  return { svc, seeded: await seedHomelab(svc.services) };
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

// A page's own DOM, typed just enough: the test project's lib has no DOM types.
type PageDocument = { querySelector(s: string): { value?: string } | null; querySelectorAll(s: string): { length: number } };

/*
 * Waits for the page's DOM to reach a state. These pass playwright a function, never a
 * string: a string predicate is evaluated again on every poll with eval, which the UI's
 * Content-Security-Policy (no 'unsafe-eval') refuses once the first check was false.
 */

/** Until `selector` matches exactly `n` elements. */
export async function waitForCount(page: Page, selector: string, n: number): Promise<void> {
  await page.waitForFunction(
    ([sel, count]) => (globalThis as unknown as { document: PageDocument }).document.querySelectorAll(sel).length === count,
    [selector, n] as const,
  );
}

/** Until the form control `selector` matches holds `value`. */
export async function waitForValue(page: Page, selector: string, value: string): Promise<void> {
  await page.waitForFunction(
    ([sel, v]) => (globalThis as unknown as { document: PageDocument }).document.querySelector(sel)?.value === v,
    [selector, value] as const,
  );
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

/** The dialog that shows an identity's new credentials once: waited for with its warning; the values it shows. */
export async function shownCredentials(page: Page, identityName: string): Promise<{ dialog: Locator; clientId: string; clientSecret: string }> {
  const dialog = page.getByRole('dialog', { name: `Credentials for ${identityName}` });
  await dialog.waitFor();
  await dialog.getByText('it will not be shown again').waitFor();
  const shown = async (testId: string) => (await dialog.getByTestId(testId).textContent())!.trim();
  return { dialog, clientId: await shown('client-id'), clientSecret: await shown('client-secret') };
}

export async function loginThroughUi(page: Page, url: string, password = ADMIN.password): Promise<void> {
  await page.goto(url);
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
  await page.getByLabel('Email').fill(ADMIN.email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}
