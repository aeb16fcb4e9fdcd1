import { SERVICE_TOKEN_HEADER, signServiceToken } from '@tollgate/auth';
import { AppError, type ErrorType, errorStatus } from '@tollgate/errors';
import type { KeysConfig } from '../config';
import { type CommandGroup, defineCommand, UsageError } from './command';

/**
 * Billing-backed admin commands (owned by the billing engineer): credits and the postpaid flag
 * live in billing's Postgres schema, so these commands resolve `--account <slug>` through the keys
 * service's own code and call billing's internal API at BILLING_URL with a service token.
 */
async function callBilling(
  config: KeysConfig,
  method: string,
  path: string,
  body: unknown,
): Promise<unknown> {
  if (!config.BILLING_URL)
    throw new UsageError('BILLING_URL is not set: credits live in the billing service');
  let res: Response;
  try {
    res = await fetch(`${config.BILLING_URL}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        [SERVICE_TOKEN_HEADER]: signServiceToken(
          { kind: 'service', service: 'cli' },
          config.SERVICE_JWT_SECRET,
        ),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    throw new AppError(
      'service_unavailable',
      `billing at ${config.BILLING_URL} did not answer: ${(err as Error).message}`,
    );
  }
  const json = (await res.json().catch(() => null)) as {
    data?: unknown;
    error?: { message?: string; metadata?: { error_type?: string } };
  } | null;
  if (!res.ok) {
    const type = json?.error?.metadata?.error_type;
    const known = type && type in errorStatus ? (type as ErrorType) : 'internal';
    throw new AppError(known, json?.error?.message ?? `billing answered HTTP ${res.status}`);
  }
  return json?.data;
}

export const creditsCommands: CommandGroup = {
  name: 'credits',
  summary: 'Account credits (prepaid balance checked before each request)',
  commands: [
    defineCommand({
      name: 'add',
      summary: 'Add credits to an account (a negative amount corrects a grant)',
      options: {
        account: { type: 'string', required: true, description: 'account slug, e.g. acme' },
        amount: { type: 'string', required: true, description: 'USD amount, e.g. 25 or 10.50' },
        note: { type: 'string', description: 'ledger note (who, why)' },
      },
      async run({ runtime, config }, o) {
        if (!/^-?\d+(\.\d{1,10})?$/.test(o.amount)) {
          throw new UsageError(`--amount must be a USD amount like 25 or 10.50, got "${o.amount}"`);
        }
        const account = await runtime.accounts.requireBySlug(o.account);
        const data = (await callBilling(config, 'POST', `/internal/accounts/${account.id}/credits`, {
          amount: o.amount,
          note: o.note ?? null,
        })) as { total_credits: string };
        return {
          data: {
            account: account.slug,
            account_id: account.id,
            added: o.amount,
            total_credits: data.total_credits,
          },
          text: `Added ${o.amount} USD to ${account.slug}; total credits ${data.total_credits} USD`,
        };
      },
    }),
  ],
};

/** `accounts set-postpaid --account acme [--off]`: registered into the accounts group in main.ts. */
export const setPostpaidCommand = defineCommand({
  name: 'set-postpaid',
  summary: 'Bill the account after the fact (no credit check); --off makes it prepaid again',
  options: {
    account: { type: 'string', required: true, description: 'account slug, e.g. acme' },
    off: { type: 'boolean', description: 'switch postpaid off (prepaid: requests need credits)' },
  },
  async run({ runtime, config }, o) {
    const account = await runtime.accounts.requireBySlug(o.account);
    const data = (await callBilling(config, 'PUT', `/internal/accounts/${account.id}/postpaid`, {
      postpaid: !o.off,
    })) as { postpaid: boolean };
    return {
      data: { account: account.slug, account_id: account.id, postpaid: data.postpaid },
      text: `${account.slug} is now ${data.postpaid ? 'postpaid' : 'prepaid'}`,
    };
  },
});
