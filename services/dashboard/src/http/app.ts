import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { constants as zlib } from 'node:zlib';
import type { ServiceVerifier } from '@tollgate/auth';
import type { Catalog } from '@tollgate/catalog';
import {
  type ClientAddress,
  createServiceApp,
  jsonBody,
  notFoundHandler,
  type ReadinessCheck,
} from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import compression from 'compression';
import express, { type RequestHandler } from 'express';
import type { Registry } from 'prom-client';
import { accountRoutes } from '../api/account.routes';
import { auditRoutes } from '../api/audit.routes';
import { errorsRoutes } from '../api/errors.routes';
import { keysRoutes } from '../api/keys.routes';
import { settingsRoutes } from '../api/settings.routes';
import { webhooksRoutes } from '../api/webhooks.routes';
import { authRoutes } from '../auth/auth.routes';
import type { AuthService } from '../auth/auth.service';
import type { DashboardDb } from '../database';
import { ssoRoutes } from '../sso/sso.routes';
import type { SsoService } from '../sso/sso.service';
import { teamMembersRoutes } from '../teams/team-members.routes';
import { createTeamMembersService } from '../teams/team-members.service';
import { teamScope } from '../teams/team-scope';
import { teamsRoutes } from '../teams/teams.routes';
import type { InternalClient } from '../upstream/internal-client';
import type { WebhooksClient } from '../upstream/webhooks-client';
import { usersRoutes } from '../users/users.routes';
import type { UsersService } from '../users/users.service';
import { loadSession, sameOrigin } from './session';

export interface DashboardAppDeps {
  /** Request metrics are counted into this registry (served on the metrics port by main.ts). */
  metrics?: Registry;
  db: DashboardDb;
  auth: AuthService;
  users: UsersService;
  client: InternalClient;
  /** Billing's alert webhooks (the Alerts page); absent: no `/api/webhooks` routes. */
  webhooks?: WebhooksClient;
  catalog: Catalog;
  /** Checks the service tokens of the internal routes (this service's trusted callers). */
  verifier: ServiceVerifier;
  uiDir: string;
  publicUrl: string;
  secureCookie: boolean;
  /** The client's address (TRUSTED_PROXIES), for the sign-in throttle. */
  clientAddress: ClientAddress;
  clock: () => Date;
  logger: Logger;
  readiness: Record<string, ReadinessCheck>;
  /** Single sign-on (null: off) and its redirect URL; PASSWORD_SIGN_IN. */
  sso: SsoService | null;
  ssoRedirectUrl: string | null;
  passwordSignIn: boolean;
}

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

const securityHeaders =
  (secureCookie: boolean): RequestHandler =>
  (_req, res, next) => {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    // HSTS only where the cookie is Secure (served over TLS, directly or behind a terminating proxy).
    if (secureCookie) res.setHeader('strict-transport-security', 'max-age=31536000; includeSubDomains');
    next();
  };

/** The dashboard: health, the JSON API under /api (session cookie), /internal (service token), the SPA. */
export function createDashboardApp(deps: DashboardAppDeps): express.Express {
  return createServiceApp({
    service: 'dashboard',
    logger: deps.logger,
    readiness: deps.readiness,
    metrics: deps.metrics,
    before: [
      securityHeaders(deps.secureCookie),
      // gzip or brotli (what the browser prefers) for every text answer over 1 KB: the app's scripts
      // and styles, index.html and the JSON API. Brotli at quality 5: near gzip -9's size at a fraction
      // of quality 11's CPU (answers are compressed per request).
      compression({ threshold: 1024, brotli: { params: { [zlib.BROTLI_PARAM_QUALITY]: 5 } } }),
    ],
    // Bodies are parsed by the API router only (static files never pay for it).
    routes(app) {
      app.set('etag', false);
      app.use(apiRouter(deps));
      serveUi(app, deps.uiDir);
    },
  });
}

/** /api (session cookie) and /internal (service token): only those requests enter it. */
function apiRouter(deps: DashboardAppDeps): RequestHandler {
  const api = express.Router();
  api.use((_req, res, next) => {
    res.setHeader('cache-control', 'no-store');
    next();
  });
  api.use(jsonBody('64kb'));
  api.use(sameOrigin);
  api.use(loadSession(deps.auth, deps.secureCookie));
  // Team viewers (role member): only their teams' keys and usage, decided here for every route.
  api.use(teamScope(deps));
  api.use(
    authRoutes({
      auth: deps.auth,
      client: deps.client,
      secureCookie: deps.secureCookie,
      clientAddress: deps.clientAddress,
      passwordSignIn: deps.passwordSignIn,
    }),
  );
  api.use(
    ssoRoutes({
      sso: deps.sso,
      auth: deps.auth,
      passwordSignIn: deps.passwordSignIn,
      publicUrl: deps.publicUrl,
      redirectUrl: deps.ssoRedirectUrl,
      secureCookie: deps.secureCookie,
      clientAddress: deps.clientAddress,
    }),
  );
  api.use(usersRoutes(deps));
  api.use(teamsRoutes(deps));
  // The management API's `/teams/{id}/members` (the keys service's calls).
  api.use(teamMembersRoutes({ members: createTeamMembersService(deps.db), verifier: deps.verifier }));
  api.use(keysRoutes({ client: deps.client, clientAddress: deps.clientAddress }));
  api.use(settingsRoutes({ client: deps.client, clientAddress: deps.clientAddress }));
  api.use(auditRoutes({ client: deps.client, db: deps.db, verifier: deps.verifier }));
  api.use(accountRoutes({ client: deps.client, catalog: deps.catalog, clock: deps.clock }));
  api.use(errorsRoutes({ client: deps.client }));
  if (deps.webhooks) api.use(webhooksRoutes({ webhooks: deps.webhooks, clientAddress: deps.clientAddress }));
  api.use(notFoundHandler);
  // The routers carry full paths; only /api and /internal requests enter them (static files never
  // pay for body parsing or a session lookup).
  return (req, res, next) => {
    if (req.path === '/api' || req.path.startsWith('/api/') || req.path.startsWith('/internal/'))
      api(req, res, next);
    else next();
  };
}

function serveUi(app: express.Express, uiDir: string) {
  // The single-page app (hash routing: every page is index.html). Vite names every file under
  // assets/ by its content hash: cached for a year, immutable. index.html names them, so it is
  // revalidated on every load (a deploy is seen at once); anything else (favicon) for a day.
  const index = join(uiDir, 'index.html');
  app.use(
    express.static(uiDir, {
      index: 'index.html',
      setHeaders(res, path) {
        if (basename(dirname(path)) === 'assets')
          res.setHeader('cache-control', 'public, max-age=31536000, immutable');
        else if (path.endsWith('.html')) res.setHeader('cache-control', 'no-cache');
        else res.setHeader('cache-control', 'public, max-age=86400');
      },
    }),
  );
  app.get('/', (_req, res) => {
    res.setHeader('cache-control', 'no-cache');
    if (existsSync(index)) res.sendFile(index);
    else res.status(503).type('text/plain').send('The dashboard UI is not built: run `make install`.\n');
  });
}
