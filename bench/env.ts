// What every bench starts the service with: production mode, fresh keys, a loopback
// ephemeral port and its own data folder. Each bench adds what it measures under.
import { randomBytes } from 'node:crypto';

export function serviceEnv(dataDir: string): Record<string, string> {
  return {
    NODE_ENV: 'production',
    ENCRYPTION_KEY: randomBytes(16).toString('hex'),
    AUTH_SECRET: randomBytes(32).toString('base64'),
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: dataDir,
  };
}
