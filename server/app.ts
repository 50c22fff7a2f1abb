// The running service: services wired to the HTTP front, listening.
import type { Config } from './config.js';
import { createHttpServer } from './http/app.js';
import { loadStaticUi } from './http/static.js';
import { registerStatusRoutes } from './routes/status.js';
import { registerSecretWriteRoutes } from './routes/secretWrites.js';
import { registerAuditRoutes } from './routes/v1/audit.js';
import { registerExportRoutes } from './routes/v1/export.js';
import { registerAuthRoutes } from './routes/v1/auth.js';
import { registerIdentityRoutes } from './routes/v1/identities.js';
import { registerMembershipRoutes } from './routes/v1/memberships.js';
import { registerProjectRoutes } from './routes/v1/projects.js';
import { registerProjectAdminRoutes } from './routes/v1/projectsAdmin.js';
import { registerSecretVersionRoutes } from './routes/v1/secretVersions.js';
import { registerUserRoutes } from './routes/v1/users.js';
import { registerFolderRoutes } from './routes/v2/folders.js';
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
      logger: { error: (obj: Record<string, unknown>, msg: string) => log.error(`${msg} ${JSON.stringify(obj)}`) },
      onNotFound: loadStaticUi()?.handler,
    });
    registerStatusRoutes(http.router, services);
    registerAuthRoutes(http.router, services);
    registerIdentityRoutes(http.router, services);
    registerMembershipRoutes(http.router, services);
    registerAuditRoutes(http.router, services);
    registerUserRoutes(http.router, services);
    registerProjectRoutes(http.router, services);
    registerProjectAdminRoutes(http.router, services);
    registerFolderRoutes(http.router, services);
    registerSecretReadRoutes(http.router, services);
    registerSecretWriteRoutes(http.router, services);
    registerSecretVersionRoutes(http.router, services);
    registerExportRoutes(http.router, services);
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
