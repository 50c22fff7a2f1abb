// The composition root hands ENCRYPTION_KEY to the crypto workers and then drops its
// own references: the field of the config object it was given, and the variable in
// process.env. AUTH_SECRET likewise: its per-purpose keys are derived at start and its
// bytes zeroed. (A heap snapshot of the running process: main.test.ts.)
import t from 'tap';
import { parseConfig } from '../../server/config.js';
import { createServices } from '../../server/services.js';
import { BACKENDS, quietLog, testEnv } from '../helpers/service.js';

for (const backend of BACKENDS) {
  t.test(`after start-up the service keeps no ENCRYPTION_KEY (${backend})`, async (t) => {
    const env = await testEnv(t, backend);
    const config = parseConfig(env);
    t.equal(config.encryptionKey, env.ENCRYPTION_KEY, 'parsed');
    process.env.ENCRYPTION_KEY = env.ENCRYPTION_KEY;
    const services = await createServices(config, quietLog);
    t.teardown(() => services.close());

    t.notOk('encryptionKey' in config, 'not in the config object');
    t.notOk('ENCRYPTION_KEY' in process.env, 'not in process.env');
    const dk = await services.crypto.generateDataKey('project:p');
    t.same(await services.crypto.openMany(dk, 'project:p', []), [], 'the workers still hold it');
  });
}

for (const backend of BACKENDS) {
  t.test(`after start-up the service keeps no AUTH_SECRET (${backend})`, async (t) => {
    const env = await testEnv(t, backend);
    const config = parseConfig(env);
    const secret = config.authSecret;
    t.ok(secret.some((b) => b !== 0), 'parsed');
    const services = await createServices(config, quietLog);
    t.teardown(() => services.close());

    t.notOk('authSecret' in config, 'not in the config object');
    t.ok(secret.every((b) => b === 0), 'its bytes are zeroed');
    const signedUp = await services.users.signup({ email: 'a@example.test', password: 'a long admin passphrase', firstName: 'A', ip: null });
    t.equal((await services.users.authenticate(signedUp.token)).userId, signedUp.user.id, 'sessions are still signed and verified (derived keys)');
  });
}
