// The running service: services wired to the HTTP front, listening.
import type { Config } from './config.js';
import { createHttpServer } from './http/app.js';
import { loadStaticUi } from './http/static.js';
import { createApi, type Api } from './routes/api.js';
import { registerOpenApiRoute } from './routes/openapi.js';
import { registerStatusRoutes } from './routes/status.js';
import { registerAdminRoutes } from './routes/v1/admin.js';
import { registerAuditRoutes } from './routes/v1/audit.js';
import { registerAuthRoutes } from './routes/v1/auth.js';
import { registerEnvironmentRoutes } from './routes/v1/environments.js';
import { registerExportRoutes } from './routes/v1/export.js';
import { registerIdentityRoutes } from './routes/v1/identities.js';
import { registerMembershipRoutes } from './routes/v1/memberships.js';
import { registerProjectRoutes } from './routes/v1/projects.js';
import { registerSecretVersionRoutes } from './routes/v1/secretVersions.js';
import { registerUniversalAuthRoutes } from './routes/v1/universalAuth.js';
import { registerUserRoutes } from './routes/v1/users.js';
import { registerFolderRoutes } from './routes/v2/folders.js';
import { registerLoginRoutes } from './routes/v3/auth.js';
import { registerV3SecretRoutes } from './routes/v3/secrets.js';
import { registerV4SecretRoutes } from './routes/v4/secrets.js';
import { createServices, type Logger, type Services } from './services.js';

export interface RunningService {
  port: number;
  services: Services;
  /** Every declared route (method, path, who may call it, its schemas). */
  routes: Api['routes'];
  close(): Promise<void>;
}

/** Every route module, in the order they are registered. */
const ROUTE_MODULES: ReadonlyArray<(api: Api, svc: Services) => void> = [
  registerStatusRoutes,
  registerAdminRoutes,
  registerLoginRoutes,
  registerAuthRoutes,
  registerUserRoutes,
  registerIdentityRoutes,
  registerUniversalAuthRoutes,
  registerProjectRoutes,
  registerEnvironmentRoutes,
  registerMembershipRoutes,
  registerFolderRoutes,
  registerV3SecretRoutes,
  registerV4SecretRoutes,
  registerSecretVersionRoutes,
  registerExportRoutes,
  registerAuditRoutes,
  // Last: it describes every route above.
  registerOpenApiRoute,
];

export async function startService(config: Config, log: Logger): Promise<RunningService> {
  const services = await createServices(config, log);
  try {
    const http = createHttpServer({
      maxBodyBytes: config.maxBodyBytes,
      logger: { error: (obj: Record<string, unknown>, msg: string) => log.error(`${msg} ${JSON.stringify(obj)}`) },
      onNotFound: loadStaticUi()?.handler,
    });
    const api = createApi(http.router, services.auth, { trustedProxies: config.trustedProxies });
    for (const register of ROUTE_MODULES) register(api, services);
    const port = await http.listen(config.port, config.host);
    return {
      port,
      services,
      routes: api.routes,
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
