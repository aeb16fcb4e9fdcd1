import {
  type CreateUserRequest,
  createUser,
  type GrantCreditsRequest,
  grantCredits,
} from '@tollgate/contracts';
import { badRequest, isAppError } from '@tollgate/errors';
import type { Account } from '../accounts/accounts.table';
import { type CliContext, type CommandGroup, defineCommand, UsageError } from './command';
import { callService, serviceTarget } from './service-call';

/** The gateway's public API as `make dev` serves it; PROXY_URL or --proxy-url for another address. */
const DEV_PROXY_URL = 'http://127.0.0.1:8080/api/v1';
const DEMO_CREDITS = '10';
const DEMO_KEY_LIMIT = 5;

const trimSlash = (s: string) => s.trim().replace(/\/+$/, '');
const USD = /^\d+(\.\d{1,10})?$/;
const unreachable = (proxyUrl: string, err: unknown) =>
  badRequest(
    `the gateway at ${proxyUrl} did not answer (${String(err)}); is it running? (--proxy-url, PROXY_URL)`,
  );

/** Creates the account's first owner; an owner of that email already there gets a fresh address. */
async function createOwner(ctx: CliContext, accountId: string, slug: string) {
  const create = (email: string) => {
    const body: CreateUserRequest = {
      account_id: accountId,
      email,
      display_name: 'Demo owner',
      role: 'owner',
    };
    return callService(
      serviceTarget(ctx, 'dashboard'),
      createUser.method,
      createUser.path,
      body,
      createUser.response,
    );
  };
  try {
    return (await create(`owner@${slug}.example`)).data;
  } catch (err) {
    if (!isAppError(err) || err.type !== 'conflict') throw err;
    return (await create(`owner-${Date.now().toString(36)}@${slug}.example`)).data;
  }
}

/**
 * `demo bootstrap`: a ready-to-try account in one step (`make demo`, and the `demo` step of
 * `docker compose up`). Creates the account if it is missing — with $10 of credits only then (unless
 * `--credits` says otherwise), so a rerun never grants twice — a management key (as the CLI does), an inference key made with that
 * management key through the gateway's public `POST /keys` (so the printed first request is known to
 * reach a running gateway), and a dashboard owner with a one-time sign-in link.
 */
export const demoCommands: CommandGroup = {
  name: 'demo',
  summary: 'A ready-to-try demo account (make demo; the demo step of docker compose up)',
  commands: [
    defineCommand({
      name: 'bootstrap',
      summary:
        'Create (or reuse) an account with $10 of credits, a management key, an inference key and a dashboard owner',
      options: {
        account: { type: 'string', description: 'account slug (default: demo)' },
        credits: {
          type: 'string',
          description: `USD credits to grant (default: ${DEMO_CREDITS} when the account is new, else none)`,
        },
        'proxy-url': {
          type: 'string',
          description: `the gateway's API base (default: PROXY_URL, else ${DEV_PROXY_URL})`,
        },
      },
      async run(ctx, o) {
        const { runtime } = ctx;
        const slug = o.account ?? 'demo';
        const proxyUrl = trimSlash(o['proxy-url'] ?? ctx.env.PROXY_URL ?? DEV_PROXY_URL);
        // What the printed instructions name (inside compose the CLI reaches http://proxy:8080, users localhost).
        const publicUrl = trimSlash(ctx.env.PUBLIC_API_URL ?? proxyUrl);
        if (o.credits !== undefined && !USD.test(o.credits)) {
          throw new UsageError(`--credits must be a USD amount like 10 or 2.50, got "${o.credits}"`);
        }
        // Nothing is created unless the gateway answers (a rerun would not grant the credits again).
        await fetch(`${proxyUrl}/models`, { signal: AbortSignal.timeout(10_000) })
          .then((r) => r.body?.cancel())
          .catch((err: unknown) => {
            throw unreachable(proxyUrl, err);
          });
        let account: Account;
        let created = true;
        try {
          account = await runtime.accounts.create({ slug, name: 'Demo account' });
        } catch (err) {
          if (!isAppError(err) || err.type !== 'conflict') throw err;
          account = await runtime.accounts.requireBySlug(slug);
          created = false;
        }
        const credits = o.credits ?? (created ? DEMO_CREDITS : '0');
        if (Number(credits) > 0) {
          const body: GrantCreditsRequest = { amount: credits, note: 'demo credits' };
          await callService(
            serviceTarget(ctx, 'billing'),
            grantCredits.method,
            grantCredits.path(account.id),
            body,
            grantCredits.response,
          );
        }
        const management = await runtime.keys.create(account.id, {
          name: `demo management ${new Date().toISOString()}`,
          scope: 'management',
        });
        const res = await fetch(`${proxyUrl}/keys`, {
          method: 'POST',
          headers: { authorization: `Bearer ${management.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'demo inference key', limit: DEMO_KEY_LIMIT, limit_reset: 'daily' }),
          signal: AbortSignal.timeout(10_000),
        }).catch((err: unknown) => {
          throw unreachable(proxyUrl, err);
        });
        const answer = (await res.json().catch(() => null)) as { data?: { key?: unknown } } | null;
        const inferenceKey = answer?.data?.key;
        if (res.status !== 201 || typeof inferenceKey !== 'string') {
          throw badRequest(`creating the inference key through ${proxyUrl}/keys failed: HTTP ${res.status}`);
        }
        const owner = await createOwner(ctx, account.id, slug);
        const data = {
          account: slug,
          account_id: account.id,
          created,
          credits_granted: credits,
          management_key: management.key,
          inference_key: inferenceKey,
          inference_key_limit: { limit: DEMO_KEY_LIMIT, limit_reset: 'daily' },
          owner_email: owner.email,
          sign_in_link: owner.sign_in_link,
          api_base: publicUrl,
        };
        const text = `
Demo account "${slug}" is ready (${Number(credits) > 0 ? `$${credits} of credits granted` : 'no credits added: --credits <usd> grants some'}).

  management key  ${management.key}
  inference key   ${inferenceKey}   (limit $${DEMO_KEY_LIMIT}/day)

Dashboard         ${owner.sign_in_link}
  Open the link, choose a password (12+ characters), and you are signed in as ${owner.email}.

First request:

  curl ${publicUrl}/chat/completions \\
    -H "Authorization: Bearer ${inferenceKey}" -H "Content-Type: application/json" \\
    -d '{"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "Hello!"}]}'`;
        return { data, text };
      },
    }),
  ],
};
