import type { ServiceVerifier } from '@tollgate/auth';
import { REQUEST_ID_PATTERN } from '@tollgate/auth';
import type { generationSchema } from '@tollgate/contracts';
import { notFound } from '@tollgate/errors';
import { parseInput } from '@tollgate/http';
import { toNumber, toUnits } from '@tollgate/money';
import { Router } from 'express';
import { z } from 'zod';
import { generatingMs, tokensPerSecond, usToMs } from '../analytics/latency';
import type { BillingDb } from '../database';
import { keyCallerRead } from '../http/caller';
import type { KeyOwners } from '../keys/key-owners';
import { findGeneration, missingGenerationMessage } from './generations.repository';
import type { Generation } from './generations.table';

const query = z.object({
  id: z.string({ error: 'is required' }).regex(REQUEST_ID_PATTERN, 'expected a request id (gen-…)'),
});

/** The generation record of DESIGN.md. */
export function generationView(g: Generation): z.input<typeof generationSchema> {
  return {
    id: g.id,
    model: g.model,
    provider_name: g.provider_name,
    upstream_id: g.upstream_id,
    created_at: g.created_at.toISOString(),
    streamed: g.streamed,
    cancelled: g.cancelled,
    finish_reason: g.finish_reason,
    tokens_prompt: Number(g.tokens_prompt),
    tokens_completion: Number(g.tokens_completion),
    tokens_cached: Number(g.tokens_cached),
    tokens_cache_write: Number(g.tokens_cache_write),
    tokens_reasoning: Number(g.tokens_reasoning),
    total_cost: toNumber(toUnits(g.total_cost)),
    is_byok: g.is_byok,
    usage_source: g.usage_source,
    app: g.app,
    latency_ms: Number(g.latency_ms),
    generation_time_ms: Number(g.generation_time_ms),
    gateway_overhead_ms: g.gateway_overhead_us === null ? null : usToMs(Number(g.gateway_overhead_us)),
    tokens_per_second: tokensPerSecond(
      Number(g.tokens_completion),
      generatingMs(g.streamed, Number(g.latency_ms), Number(g.generation_time_ms)),
    ),
    attempts: g.attempts ?? [],
    http_referer: g.http_referer,
    session_id: g.session_id,
    withheld_tools: g.withheld_tools ?? [],
    // OpenRouter's record fields (@openrouter/sdk parses them). Concepts Tollgate does not have get a
    // neutral value (null, or `global` for the data region); docs/api.md lists them.
    // The door: chat completions keep OpenRouter's `completions`; other doors say theirs (`messages`).
    api_type: g.api_type === null || g.api_type === 'chat' ? 'completions' : g.api_type,
    app_id: null,
    cache_discount: null,
    data_region: 'global',
    external_user: g.end_user,
    generation_time: Number(g.generation_time_ms),
    latency: Number(g.latency_ms),
    moderation_latency: null,
    native_finish_reason: g.finish_reason,
    native_tokens_prompt: Number(g.tokens_prompt),
    native_tokens_completion: Number(g.tokens_completion),
    native_tokens_cached: Number(g.tokens_cached),
    native_tokens_reasoning: Number(g.tokens_reasoning),
    native_tokens_completion_images: null,
    num_fetches: null,
    num_input_audio_prompt: null,
    num_media_completion: null,
    num_media_prompt: null,
    num_search_results: null,
    origin: g.http_referer ?? '',
    preset_id: null,
    provider_responses:
      g.attempts && g.attempts.length > 0
        ? g.attempts.map((a) => ({
            provider_name: a.provider,
            model_permaslug: a.model,
            status: a.status,
            latency: a.latency_ms,
          }))
        : null,
    router: null,
    service_tier: null,
    upstream_inference_cost: null,
    usage: toNumber(toUnits(g.total_cost)),
    user_agent: null,
    web_search_engine: null,
    workspace_id: null,
  };
}

/** GET /generation?id=gen-…: the caller's own record; 404 until recorded or if another account's. */
export function generationsRoutes(deps: {
  db: BillingDb;
  verifier: ServiceVerifier;
  owners: KeyOwners;
  retentionCutoff: () => Date | null;
}): Router {
  const router = Router();
  router.get(
    '/generation',
    keyCallerRead(
      deps,
      'inference',
      async (req, caller) => {
        const { id } = parseInput(query, { id: typeof req.query.id === 'string' ? req.query.id : undefined });
        const row = await findGeneration(deps.db, id);
        if (!row || row.account_id !== caller.accountId) {
          throw notFound(missingGenerationMessage(id, deps.retentionCutoff()));
        }
        return row;
      },
      (res, row) => {
        res.json({ data: generationView(row) });
      },
    ),
  );
  return router;
}
