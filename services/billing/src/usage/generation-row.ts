import type { UsageEventV1 } from '@tollgate/events';
import type { GenerationRow } from '../generations/generations.repository';

/** The generation record of a usage event, its cost as the normalised decimal recorded. */
export function toGenerationRow(e: UsageEventV1, totalCost: string): GenerationRow {
  return {
    id: e.id,
    account_id: e.account_id,
    key_id: e.key_id,
    model: e.model,
    provider_name: e.provider_name,
    upstream_model: e.upstream_model,
    upstream_id: e.upstream_id,
    app: e.app,
    http_referer: e.http_referer ?? null,
    api_type: e.api_type ?? null,
    session_id: e.session_id ?? null,
    end_user: e.end_user ?? null,
    withheld_tools: e.withheld_tools && e.withheld_tools.length > 0 ? e.withheld_tools : null,
    streamed: e.streamed,
    cancelled: e.cancelled,
    finish_reason: e.finish_reason,
    tokens_prompt: e.tokens.prompt,
    tokens_completion: e.tokens.completion,
    tokens_cached: e.tokens.cached,
    tokens_cache_write: e.tokens.cache_write,
    tokens_reasoning: e.tokens.reasoning,
    total_cost: totalCost,
    is_byok: e.is_byok,
    usage_source: e.usage_source,
    latency_ms: e.latency_ms,
    generation_time_ms: e.generation_time_ms,
    gateway_overhead_us: e.gateway_overhead_us ?? null,
    error: e.error,
    attempts: e.attempts ?? [],
    created_at: e.started_at,
    finished_at: e.finished_at,
  };
}
