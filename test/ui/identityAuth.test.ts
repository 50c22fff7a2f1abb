// An identity's authentication on screen (issue 32 point 2, issue 28 point 4): Universal
// Auth's settings, OIDC and JWT Auth configurations, the projects it belongs to. A JWT/OIDC
// configuration that binds nothing is refused by the server (422) and the UI shows that
// reason by the binding fields, whose rule it explains before anyone types.
import t from 'tap';
import { request } from '../helpers/http.js';
import { browserTest, homelabService, loginThroughUi, newPage, shot } from './helpers.js';

browserTest(t, 'identity auth screens: Universal Auth settings, OIDC and JWT Auth, projects', async (t) => {
  const { svc, seeded } = await homelabService(t);
  const { page } = await newPage(t);
  await loginThroughUi(page, svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  await page.goto(`${svc.url}/identities/${seeded.identityId}`);
  await page.getByRole('heading', { name: 'homelab-eso', level: 1 }).waitFor();
  const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  const read = async (path: string) => (await request(`${svc.url}${path}`, { headers: { cookie } })).body as any;

  // -- projects --------------------------------------------------------------------------------
  const projects = page.getByRole('table', { name: 'Projects of this identity' });
  await projects.waitFor();
  t.match(await projects.locator('tbody').textContent(), /homelab\s*member/, 'homelab, as member');

  // -- Universal Auth settings ------------------------------------------------------------------
  const ua = page.getByRole('form', { name: 'Universal Auth settings' });
  await ua.getByLabel('Access-token lifetime (seconds)').fill('600');
  await ua.getByLabel('Maximum lifetime with renewals (seconds)').fill('7200');
  await ua.getByLabel('Uses per access token').fill('5');
  await ua.getByLabel('Logins allowed from').fill('10.0.0.0/8, 192.168.1.7');
  await ua.getByRole('button', { name: 'Save settings' }).click();
  await ua.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
  const saved = (await read(`/api/v1/auth/universal-auth/identities/${seeded.identityId}`)).identityUniversalAuth;
  t.same(
    [saved.accessTokenTTL, saved.accessTokenMaxTTL, saved.accessTokenNumUsesLimit, saved.clientSecretTrustedIps.map((i: any) => i.ipAddress)],
    [600, 7200, 5, ['10.0.0.0', '192.168.1.7']],
    'the server has the settings',
  );
  await ua.getByLabel('Uses per access token').fill('five');
  await ua.getByRole('button', { name: 'Save settings' }).click();
  await ua.getByRole('alert').filter({ hasText: 'Uses per access token must be a whole number' }).waitFor();

  // -- a client secret with a lifetime and a use limit ----------------------------------------------
  const gen = page.getByRole('form', { name: 'Generate new credentials' });
  await gen.getByLabel('Secret lifetime').fill('86400');
  await gen.getByLabel('Logins per secret').fill('3');
  await gen.getByRole('button', { name: 'Generate new credentials' }).click();
  const shown = page.getByRole('dialog', { name: 'Credentials for homelab-eso' });
  await shown.getByRole('button', { name: 'I have stored the secret' }).click();
  const secrets = (await read(`/api/v1/auth/universal-auth/identities/${seeded.identityId}/client-secrets`)).clientSecretData as any[];
  t.ok(secrets.some((c) => c.ttl === 86400 && c.numUsesLimit === 3), 'a client secret with ttl 86400 and 3 uses');
  await page.getByRole('table', { name: 'Client secrets' }).getByText('0 of 3').waitFor();

  // -- OIDC Auth: the rule up front, the server's refusal by the fields ----------------------------
  const oidcPanel = page.getByRole('region', { name: 'OIDC Auth' });
  await oidcPanel.getByRole('button', { name: 'Configure OIDC Auth' }).click();
  const oidc = page.getByRole('form', { name: 'OIDC Auth configuration' });
  const bindings = oidc.getByRole('group', { name: 'What a token must say' });
  t.match(await bindings.textContent(), /bind the subject or at least one claim\. An audience alone is not enough/, 'the rule is explained before saving');
  await oidc.getByLabel('Discovery URL').fill('https://token.actions.githubusercontent.com');
  await oidc.getByLabel('Audiences (optional)').fill('https://github.com/acme');
  await oidc.getByRole('button', { name: 'Attach OIDC Auth' }).click();
  const refusal = bindings.getByRole('alert');
  await refusal.waitFor();
  t.match(await refusal.textContent(), /OIDC Auth must bind the issuer and the subject or a claim: boundSubject or boundClaims is required/, "the server's reason, inside the bindings");
  t.equal(await oidc.getByLabel('Subject').getAttribute('aria-invalid'), 'true', 'Subject is marked');
  t.equal((await request(`${svc.url}/api/v1/auth/oidc-auth/identities/${seeded.identityId}`, { headers: { cookie } })).status, 404, 'nothing attached');
  await shot(page, '70-oidc-refused');

  await oidc.getByLabel('Subject').fill('repo:acme/app:ref:refs/heads/main');
  await oidc.getByLabel('Claims').fill('environment=production');
  await oidc.getByRole('button', { name: 'Attach OIDC Auth' }).click();
  await oidcPanel.getByRole('button', { name: 'Edit OIDC Auth' }).waitFor();
  const stored = (await read(`/api/v1/auth/oidc-auth/identities/${seeded.identityId}`)).identityOidcAuth;
  t.same([stored.oidcDiscoveryUrl, stored.boundSubject, stored.boundClaims, stored.boundAudiences], ['https://token.actions.githubusercontent.com', 'repo:acme/app:ref:refs/heads/main', { environment: 'production' }, 'https://github.com/acme']);
  t.match(await oidcPanel.textContent(), /environment=production/, 'the summary shows the bound claim');

  // -- JWT Auth: an issuer is required too ----------------------------------------------------------
  const jwtPanel = page.getByRole('region', { name: 'JWT Auth' });
  await jwtPanel.getByRole('button', { name: 'Configure JWT Auth' }).click();
  const jwt = page.getByRole('form', { name: 'JWT Auth configuration' });
  await jwt.getByLabel('JWKS URL').fill('https://issuer.example.test/jwks.json');
  await jwt.getByLabel('Subject').fill('system:serviceaccount:eso:eso');
  await jwt.getByRole('button', { name: 'Attach JWT Auth' }).click();
  await jwt.getByRole('alert').filter({ hasText: 'boundIssuer is required' }).waitFor();
  t.equal(await jwt.getByLabel('Issuer').getAttribute('aria-invalid'), 'true', 'Issuer is marked');
  await jwt.getByLabel('Issuer').fill('https://issuer.example.test');
  await jwt.getByRole('button', { name: 'Attach JWT Auth' }).click();
  await jwtPanel.getByRole('button', { name: 'Edit JWT Auth' }).waitFor();
  t.equal((await read(`/api/v1/auth/jwt-auth/identities/${seeded.identityId}`)).identityJwtAuth.boundIssuer, 'https://issuer.example.test');
  await shot(page, '71-identity-auth');

  // -- remove OIDC Auth ---------------------------------------------------------------------------
  await oidcPanel.getByRole('button', { name: 'Remove OIDC Auth' }).click();
  await page.getByRole('dialog', { name: 'Remove OIDC Auth' }).getByRole('button', { name: 'Remove OIDC Auth' }).click();
  await oidcPanel.getByRole('button', { name: 'Configure OIDC Auth' }).waitFor();
  t.equal((await request(`${svc.url}/api/v1/auth/oidc-auth/identities/${seeded.identityId}`, { headers: { cookie } })).status, 404, 'removed');
});
