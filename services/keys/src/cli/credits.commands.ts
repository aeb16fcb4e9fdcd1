import {
  type GrantCreditsRequest,
  grantCredits,
  type ReplayDeadLettersRequest,
  replayDeadLetters,
  type SetPostpaidRequest,
  setPostpaid,
  showDeadLetters,
} from '@tollgate/contracts';
import { type CliContext, type CommandGroup, defineCommand, UsageError } from './command';
import { callService, serviceTarget } from './service-call';

/**
 * Billing-backed admin commands (owned by the billing engineer): credits and the postpaid flag
 * live in billing's Postgres schema, so these commands resolve `--account <slug>` through the keys
 * service's own code and call billing's internal API (BILLING_URL, default the `make dev` address)
 * with a service token.
 */
const billing = (ctx: CliContext) => serviceTarget(ctx, 'billing');

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
        const body: GrantCreditsRequest = { amount: o.amount, note: o.note ?? null };
        const { data } = await callService(
          billing(ctx),
          grantCredits.method,
          grantCredits.path(account.id),
          body,
          grantCredits.response,
        );
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
    const body: SetPostpaidRequest = { postpaid: !o.off };
    const { data } = await callService(
      billing(ctx),
      setPostpaid.method,
      setPostpaid.path(account.id),
      body,
      setPostpaid.response,
    );
    return {
      data: { account: account.slug, account_id: account.id, postpaid: data.postpaid },
      text: `${account.slug} is now ${data.postpaid ? 'postpaid' : 'prepaid'}`,
    };
  },
});

const positiveInt = (flag: string, v: string | undefined, fallback: number) => {
  if (v === undefined) return fallback;
  if (!/^[1-9]\d{0,5}$/.test(v)) throw new UsageError(`--${flag} must be a positive integer, got "${v}"`);
  return Number(v);
};

/**
 * `dlq show` / `dlq replay`: the usage dead-letter queue (billing's). Transient outages never put an
 * event there (billing retries them in-process); what is there failed on its own or is invalid.
 * Replay is exactly-once: billing records each request id once.
 */
export const dlqCommands: CommandGroup = {
  name: 'dlq',
  summary: 'Usage events billing could not record (dead-letter queue): show and replay',
  commands: [
    defineCommand({
      name: 'show',
      summary: 'List dead-lettered usage events (left in the queue)',
      options: { limit: { type: 'string', description: 'most messages to show (default 20)' } },
      async run(ctx, o) {
        const limit = positiveInt('limit', o.limit, 20);
        const { data } = await callService(
          billing(ctx),
          showDeadLetters.method,
          showDeadLetters.path(limit),
          undefined,
          showDeadLetters.response,
        );
        return {
          data,
          text: data.count === 0 ? 'The dead-letter queue is empty' : undefined,
          table:
            data.count === 0
              ? undefined
              : {
                  columns: ['id', 'account_id', 'cost', 'finished_at', 'reason'],
                  rows: data.messages.map((m) => [m.id, m.account_id, m.cost, m.finished_at, m.reason]),
                },
        };
      },
    }),
    defineCommand({
      name: 'replay',
      summary: 'Send valid dead-lettered events back to billing (exactly once; invalid ones stay)',
      options: { limit: { type: 'string', description: 'most events to replay (default 1000)' } },
      async run(ctx, o) {
        const limit = positiveInt('limit', o.limit, 1000);
        const body: ReplayDeadLettersRequest = { limit };
        const { data } = await callService(
          billing(ctx),
          replayDeadLetters.method,
          replayDeadLetters.path,
          body,
          replayDeadLetters.response,
        );
        return {
          data,
          text: `Replayed ${data.replayed} event(s); ${data.invalid} invalid left in place; ${data.remaining} in the queue now`,
        };
      },
    }),
  ],
};
