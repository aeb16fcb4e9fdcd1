import { type CliContext, type CommandGroup, defineCommand, UsageError } from './command';
import { callService } from './service-call';

/**
 * Billing-backed admin commands (owned by the billing engineer): credits and the postpaid flag
 * live in billing's Postgres schema, so these commands resolve `--account <slug>` through the keys
 * service's own code and call billing's internal API (BILLING_URL, default the `make dev` address)
 * with a service token.
 */
const callBilling = (ctx: CliContext, method: string, path: string, body: unknown) =>
  callService(
    { name: 'billing', url: ctx.urls.billing, secret: ctx.config.SERVICE_JWT_SECRET },
    method,
    path,
    body,
  );

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
      async run(ctx, o) {
        const { runtime } = ctx;
        if (!/^-?\d+(\.\d{1,10})?$/.test(o.amount)) {
          throw new UsageError(`--amount must be a USD amount like 25 or 10.50, got "${o.amount}"`);
        }
        const account = await runtime.accounts.requireBySlug(o.account);
        const data = (await callBilling(ctx, 'POST', `/internal/accounts/${account.id}/credits`, {
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
  async run(ctx, o) {
    const account = await ctx.runtime.accounts.requireBySlug(o.account);
    const data = (await callBilling(ctx, 'PUT', `/internal/accounts/${account.id}/postpaid`, {
      postpaid: !o.off,
    })) as { postpaid: boolean };
    return {
      data: { account: account.slug, account_id: account.id, postpaid: data.postpaid },
      text: `${account.slug} is now ${data.postpaid ? 'postpaid' : 'prepaid'}`,
    };
  },
});
