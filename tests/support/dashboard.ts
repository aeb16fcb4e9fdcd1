/**
 * The dashboard started against a test stack (tests/support/stack.ts): same database (its own
 * `dashboard` schema), the development service keys, keys and billing of the stack. Users are created
 * the admin CLI's way (POST /internal/users → a one-time sign-in link) and signed in through the API.
 */
import { createServiceSigner, SERVICE_TOKEN_HEADER } from '@tollgate/auth';
import { createUser } from '@tollgate/contracts';
import { type DashboardHandle, type DashboardOptions, loadConfig, startDashboard } from '@tollgate/dashboard';
import { expectContract } from '@tollgate/testkit';
import { DEV_CATALOG_PATH, type Stack } from './stack';

interface DashboardResponse {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: JSON of any shape, checked by the caller
  body: any;
}

export interface TestUser {
  email: string;
  password: string;
  accountId: string;
  role: 'owner' | 'viewer';
}

export interface DashboardSession {
  cookie: string;
  csrf: string;
  /** A request as the SPA makes it: session cookie, CSRF header on state-changing methods. */
  call(
    method: string,
    path: string,
    body?: unknown,
    options?: { csrf?: string | null; headers?: Record<string, string> },
  ): Promise<DashboardResponse>;
}

export interface TestDashboard {
  handle: DashboardHandle;
  url: string;
  /** Invites a user (the CLI's internal route) and accepts the link with a password. */
  createUser(accountId: string, role: 'owner' | 'viewer', email?: string): Promise<TestUser>;
  /** POST /api/session; throws unless 204. */
  signIn(user: Pick<TestUser, 'email' | 'password'>): Promise<DashboardSession>;
  request(
    method: string,
    path: string,
    options?: { body?: unknown; headers?: Record<string, string> },
  ): Promise<DashboardResponse>;
  close(): Promise<void>;
}

let counter = 0;
/** Stacks whose reserved dashboard port (the `dashboard` option) a dashboard already listens on. */
const portTaken = new WeakSet<Stack>();

export async function startTestDashboard(
  stack: Stack,
  options: DashboardOptions & { env?: Record<string, string> } = {},
): Promise<TestDashboard> {
  // The first dashboard of a stack started with `dashboard: true` listens where keys expects it.
  const port = stack.dashboardPort !== null && !portTaken.has(stack) ? stack.dashboardPort : 0;
  if (port) portTaken.add(stack);
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.STACK_LOG_LEVEL ?? 'silent',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: stack.infra.database.url,
    KEYS_URL: stack.services.keys.url,
    BILLING_URL: stack.services.billing.url,
    CATALOG_PATH: DEV_CATALOG_PATH,
    // The stack's service keys (development ones unless the stack generated its own).
    SERVICE_PRIVATE_KEY: stack.serviceKeys.dashboard.privateKey,
    // The admin CLI (users) and keys (its log, for the merged `GET /audit`).
    SERVICE_PUBLIC_KEYS: `admin=${stack.serviceKeys.admin.publicKey},keys=${stack.serviceKeys.keys.publicKey}`,
    ...options.env,
  });
  const admin = createServiceSigner('admin', stack.serviceKeys.admin.privateKey);
  const handle = await startDashboard(config, { catalog: stack.catalog, ...options });
  const url = handle.url;

  const request: TestDashboard['request'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.body !== undefined) headers['content-type'] ??= 'application/json';
    const res = await fetch(`${url}${path}`, {
      method,
      headers,
      body: o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body),
      redirect: 'manual',
    });
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: res.status, headers: res.headers, text, body };
  };

  const cookieFrom = (res: DashboardResponse) => {
    const set = res.headers.getSetCookie().find((c) => /^(__Host-)?tg_session=/.test(c));
    if (!set) throw new Error(`no session cookie: HTTP ${res.status} ${res.text}`);
    return set.split(';')[0]!;
  };

  const sessionFor = async (cookie: string): Promise<DashboardSession> => {
    const me = await request('GET', '/api/me', { headers: { cookie } });
    if (me.status !== 200) throw new Error(`GET /api/me: HTTP ${me.status} ${me.text}`);
    const csrf = me.body.data.csrf_token as string;
    return {
      cookie,
      csrf,
      call: (method, path, body, o = {}) => {
        const headers: Record<string, string> = { cookie, ...o.headers };
        const token = o.csrf === undefined ? csrf : o.csrf;
        if (token !== null && method !== 'GET') headers['x-csrf-token'] = token;
        return request(method, path, { body, headers });
      },
    };
  };

  return {
    handle,
    url,
    async createUser(accountId, role, email = `user${++counter}-${Date.now()}@example.test`) {
      const res = await fetch(`${url}/internal/users`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [SERVICE_TOKEN_HEADER]: await admin.sign('dashboard'),
        },
        body: JSON.stringify({ account_id: accountId, email, display_name: `Test ${role}`, role }),
      });
      const body = (await res.json()) as { data: { sign_in_link: string } };
      if (res.status !== 201)
        throw new Error(`POST /internal/users: HTTP ${res.status} ${JSON.stringify(body)}`);
      expectContract(createUser.response, body); // the owner's side of the CLI's contract
      const token = new URL(body.data.sign_in_link.replace('#/', '')).searchParams.get('token')!;
      const password = `pw-${role}-${Math.random().toString(36).slice(2)}-long`;
      const accepted = await request('POST', '/api/invites/accept', { body: { token, password } });
      if (accepted.status !== 204) throw new Error(`accept: HTTP ${accepted.status} ${accepted.text}`);
      return { email, password, accountId, role };
    },
    async signIn(user) {
      const res = await request('POST', '/api/session', {
        body: { email: user.email, password: user.password },
      });
      if (res.status !== 204) throw new Error(`sign-in: HTTP ${res.status} ${res.text}`);
      return sessionFor(cookieFrom(res));
    },
    request,
    close: () => handle.close(),
  };
}
