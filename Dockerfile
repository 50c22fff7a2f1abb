# syntax=docker/dockerfile:1
#
# vault-standalone image: multi-stage, non-root (uid 1001, group nodejs), no secrets.
# ENCRYPTION_KEY / AUTH_SECRET / DATABASE_URL / REDIS_URL are supplied at run time
# (Kubernetes Secret `vault-secrets` via envFrom, or `docker run --env-file`).
#
#   docker build -t vault-standalone:0.1.0 .
#   docker run --read-only --tmpfs /tmp -v vault-data:/data -p 8080:8080 \
#     --env-file ./vault.env vault-standalone:0.1.0
#
# Platform: linux/amd64 only. The server loads the uWebSockets.js native binary
# directly and refuses to start unless its sha256 matches a pinned value; only
# uws_linux_x64_115.node (Linux x64, Node 20) is pinned (server/http/uws.ts). On other
# hosts build with `docker build --platform linux/amd64 …`. Debian 12 (glibc 2.36) is
# what that binary was verified on.
#
# Root key in an HSM (KEY_PROVIDER=pkcs11, docs/operations.md section 5.1): the image
# carries the PKCS#11 binding (pkcs11js, built below), not a vendor's library. Mount
# the vendor's module and a PIN file read-only, and name them in the environment:
#
#   docker run ... -v /opt/vendor/pkcs11:/opt/pkcs11:ro \
#     -v ./hsm-pin:/run/secrets/pkcs11-pin:ro \
#     -e KEY_PROVIDER=pkcs11 -e PKCS11_MODULE=/opt/pkcs11/libvendor-pkcs11.so \
#     -e PKCS11_TOKEN_LABEL=vault -e PKCS11_PIN_FILE=/run/secrets/pkcs11-pin \
#     -e PKCS11_KEY_LABEL=vault-standalone-root vault-standalone:0.1.0
#
# (The module's own configuration file, e.g. a network HSM's client config, is mounted
# the same way with the variable its vendor reads, e.g. SOFTHSM2_CONF for SoftHSM2.)
#
# Base images are referenced by tag; pin them by digest (node:20-bookworm-slim@sha256:…)
# in your registry mirror for reproducible builds.

############################
# 1. build: full dependency tree, compile TypeScript
############################
FROM node:20-bookworm-slim AS build
WORKDIR /app

# A C++ toolchain for the one native addon built here: pkcs11js (an optional
# dependency, allowed to run its install script in package.json's allowScripts).
# Build stage only; the runtime image gets the built addon, not the compiler.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*

# Dependencies first so this layer is cached while only sources change.
# patches/ first: `npm ci` runs patch-package (postinstall) on the installed tree.
COPY package.json package-lock.json ./
COPY patches ./patches
RUN npm ci --no-audit --no-fund

COPY tsconfig.json ./
COPY crypto ./crypto
COPY server ./server
COPY storage ./storage
# The admin UI (Solid + Vite): `npm run build` also builds it into ui/dist, which the
# server loads at start (server/http/static.ts) and serves on the same port.
COPY ui ./ui
RUN npm run build

# Drop devDependencies (tap, typescript, autocannon, @types/*) in place.
RUN npm prune --omit=dev --no-audit --no-fund

############################
# 2. runtime: only what `node dist/server/main.js` needs
############################
FROM node:20-bookworm-slim AS runtime

# Service user: uid 1001 in group nodejs (gid 1001). The base image's `node` user is
# uid 1000 and is not used.
RUN groupadd --system --gid 1001 nodejs \
 && useradd --system --uid 1001 --gid nodejs --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin vault \
 && mkdir -p /data \
 && chown 1001:1001 /data \
 && chmod 0700 /data

WORKDIR /app

# Application files stay owned by root: the service user can read, never modify them.
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# SQL migrations are read at run time from <package root>/storage/migrations
# (storage/migrate.ts resolves ../../storage/migrations from dist/storage).
COPY --from=build /app/storage/migrations ./storage/migrations
# Built admin UI (ui/dist, made by `npm run build`).
COPY --from=build /app/ui/dist ./ui/dist

# Nothing here is secret. The embedded database (used only when DATABASE_URL is unset)
# lives in /data. With a read-only root filesystem only /data and /tmp need to be
# writable: `docker run --read-only --tmpfs /tmp -v vault-data:/data …`.
ENV NODE_ENV=production DATA_DIR=/data PORT=8080
VOLUME ["/data"]

USER 1001:1001
EXPOSE 8080

# No curl in the slim image: Node 20's global fetch does the probe, on the port the
# service listens on (PORT, as `docker run -e PORT=…` may change it; 8080 by default).
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/api/status').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

CMD ["node", "dist/server/main.js"]
