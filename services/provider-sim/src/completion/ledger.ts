import type { CompletionPlan } from './completion.handler';
import type { SimOptions } from './request';

/**
 * What the simulator charged, like a provider's invoice (issue 22): one entry per request it accepted
 * (a request answered with `sim.error_status` is not charged). Charged as a provider does: the prompt
 * and the cache figures once the request is accepted, the reasoning at once (it is thought before
 * the first token), and the content as it is generated — a non-streamed answer is generated whole
 * whether or not anyone waits for it; a stream stops generating when its reader goes away, so only
 * the content chunks it produced up to then are charged. Tests read it at GET /sim/ledger.
 */
export interface Charge {
  /** `sim.tag` of the request, or null. */
  tag: string | null;
  model: string;
  format: 'openai' | 'anthropic';
  stream: boolean;
  prompt: number;
  /** Reasoning + content tokens generated (OpenAI semantics: includes the reasoning). */
  completion: number;
  reasoning: number;
  cached: number;
  /** Every cache write, 1-hour ones included. */
  cache_write: number;
  cache_write_1h: number;
  images: number;
  /** `open` while generating; `complete`, `client_gone` (the reader left), `cut` or `error` after. */
  state: 'open' | 'complete' | 'client_gone' | 'cut' | 'error';
  started_at: string;
}

const MAX_ENTRIES = 100_000;
const entries: Charge[] = [];

/** Opens the charge of an accepted request; the handler updates `completion` and `state` as it goes. */
export function openCharge(
  plan: CompletionPlan,
  o: { model: string; format: Charge['format']; stream: boolean; sim: SimOptions; images: number },
): Charge {
  const charge: Charge = {
    tag: o.sim.tag ?? null,
    model: o.model,
    format: o.format,
    stream: o.stream,
    prompt: plan.promptTokens,
    completion: o.stream ? plan.reasoningTokens : plan.completionTokens,
    reasoning: plan.reasoningTokens,
    cached: plan.cachedTokens,
    cache_write: (plan.cacheWriteTokens ?? 0) + plan.cacheWrite1hTokens,
    cache_write_1h: plan.cacheWrite1hTokens,
    images: o.images,
    state: 'open',
    started_at: new Date().toISOString(),
  };
  if (entries.length >= MAX_ENTRIES) entries.splice(0, entries.length - MAX_ENTRIES + 1);
  entries.push(charge);
  return charge;
}

/** The ledger (GET /sim/ledger, `?tag=` filters), oldest first. */
export function ledgerJson(tag: string | null): string {
  return JSON.stringify({ data: tag === null ? entries : entries.filter((e) => e.tag === tag) });
}
