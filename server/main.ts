// Entry point: configuration, then the service. Every start-up failure ends the
// process with a message a person can act on and a non-zero exit code.
import { ConfigError, LOG_LEVELS, parseConfig, SECRET_SETTINGS, withDevelopmentKeys, type LogLevel } from './config.js';
import { startService } from './app.js';
import type { Logger } from './services.js';

/** Lines below `level` are dropped (the service logs nothing finer than info today). */
function logger(level: LogLevel): Logger {
  const min = LOG_LEVELS.indexOf(level);
  const on = (l: LogLevel) => LOG_LEVELS.indexOf(l) >= min;
  const drop = () => {};
  return {
    info: on('info') ? (m) => console.log(`[vault] ${m}`) : drop,
    warn: on('warn') ? (m) => console.warn(`[vault] WARN ${m}`) : drop,
    error: on('error') ? (m) => console.error(`[vault] ERROR ${m}`) : drop,
  };
}

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

async function main() {
  let prepared: ReturnType<typeof withDevelopmentKeys>;
  try {
    prepared = withDevelopmentKeys(process.env);
  } catch (err) {
    fail(`could not prepare development keys: ${(err as Error).message}`);
  }
  let config;
  try {
    config = parseConfig(prepared.env);
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  // The keys now live in `config` only; child processes and workers must not inherit them.
  for (const name of SECRET_SETTINGS) delete process.env[name];
  const log = logger(config.logLevel);

  if (prepared.generated) {
    const bar = '!'.repeat(78);
    console.warn(
      `${bar}\n` +
        `  DEVELOPMENT KEYS GENERATED: ${prepared.generated}\n` +
        '  BACK THIS FILE UP. Without its ENCRYPTION_KEY the secrets stored here are lost.\n' +
        '  For production set NODE_ENV=production with ENCRYPTION_KEY and AUTH_SECRET.\n' +
        `${bar}`,
    );
  } else if (prepared.loaded) {
    log.warn(`using development keys from ${prepared.loaded} (back it up; not for production)`);
  }

  const service = await startService(config, log).catch((err: Error) => fail(err.message));
  log.info(
    `listening on http://${config.host}:${service.port} ` +
      `(database: ${service.services.db.kind}, cache: ${service.services.bus.kind === 'redis' ? 'redis' : 'in-process'})`,
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal} received, shutting down`);
    service.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err: Error) => fail(err.message));
