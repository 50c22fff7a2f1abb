// The running service: services wired to the HTTP front, listening.
import type { Config } from './config.js';
import { createHttpServer } from './http/app.js';
import { registerStatusRoutes } from './routes/status.js';
import { registerAuthRoutes } from './routes/v1/auth.js';
import { registerProjectRoutes } from './routes/v1/projects.js';
import { registerUserRoutes } from './routes/v1/users.js';
import { registerSecretReadRoutes } from './routes/v3/secrets.js';
import { createServices, type Logger, type Services } from './services.js';

export interface RunningService {
  port: number;
  services: Services;
  close(): Promise<void>;
}

export async function startService(config: Config, log: Logger): Promise<RunningService> {
  const services = await createServices(config, log);
  try {
    const http = createHttpServer({
      maxBodyBytes: config.maxBodyBytes,
      logger: { error: (_obj: unknown, msg: string) => log.error(msg) },
    });
    registerStatusRoutes(http.router, services);
    registerAuthRoutes(http.router, services);
    registerUserRoutes(http.router, services);
    registerProjectRoutes(http.router, services);
    registerSecretReadRoutes(http.router, services);
    const port = await http.listen(config.port, config.host);
    return {
      port,
      services,
      async close() {
        http.close();
        await services.close();
      },
    };
  } catch (err) {
    await services.close();
    throw err;
  }
}
