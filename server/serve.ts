// The service's process (loaded by server/main.ts): configuration, then the service.
// Every start-up failure ends the process with a message a person can act on and a
// non-zero exit code.
import { ConfigError, parseConfig, SECRET_SETTINGS, withDevelopmentKeys } from './config.js';
import { startService } from './app.js';
import { createLogger } from './log.js';
import { startWatchdog } from './watchdog.js';

/**
 * After SIGTERM, the process exits by this many seconds past SHUTDOWN_GRACE_SECONDS
 * whatever is still pending (a database that never answers its close): within the
 * chart's terminationGracePeriodSeconds (grace + preStop + 5).
 */
export const HARD_EXIT_EXTRA_SECONDS = 3;

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
  // Lines below LOG_LEVEL are dropped; start-up failures (fail()) are always printed.
  const log = createLogger({ level: config.logLevel, format: config.logFormat });

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
    log.warn({ event: 'keys', file: prepared.loaded }, `using development keys from ${prepared.loaded} (back it up; not for production)`);
  }

  log.info({ event: 'starting', nodeEnv: config.nodeEnv, node: process.version }, 'starting');
  const service = await startService(config, log).catch((err: Error) => {
    log.error({ event: 'start-failed', err: err.message }, 'start-up failed');
    return fail(err.message);
  });
  const database = service.services.db.kind;
  const cache = service.services.bus.kind === 'redis' ? 'redis' : 'in-process';
  log.info(
    { event: 'listening', host: config.host, port: service.port, database, cache },
    `listening on http://${config.host}:${service.port} (database: ${database}, cache: ${cache})`,
  );

  // From here on a loop that stops turning is noticed from another thread.
  startWatchdog(config.watchdogSeconds * 1000);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    // A graceful shutdown that hangs (a database that never answers) still ends.
    setTimeout(() => {
      log.error({ event: 'stopped', hardExit: true }, `shutdown did not finish within ${config.shutdownGraceSeconds + HARD_EXIT_EXTRA_SECONDS} s: exiting anyway`);
      process.exit(1);
    }, (config.shutdownGraceSeconds + HARD_EXIT_EXTRA_SECONDS) * 1000);
    log.info(
      { event: 'shutdown', signal, inFlight: service.inFlight(), graceSeconds: config.shutdownGraceSeconds },
      `${signal} received: not ready, port closed, finishing ${service.inFlight()} request(s) in flight (up to ${config.shutdownGraceSeconds} s)`,
    );
    service.shutdown(config.shutdownGraceSeconds * 1000).then(
      (drained) => {
        if (!drained) log.warn({ event: 'shutdown' }, `shutdown: requests still in flight after ${config.shutdownGraceSeconds} s were cut off`);
        log.info({ event: 'stopped' }, 'shutdown complete');
        process.exit(0);
      },
      (err: Error) => {
        log.error({ event: 'stopped', err: err.message }, `shutdown failed: ${err.message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err: Error) => fail(err.message));
