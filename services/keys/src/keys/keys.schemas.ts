import { badRequest, describeIssues } from '@tollgate/errors';
import type { z } from 'zod';
import type { KeyGovernanceInput } from './keys.service';

/** Parses a JSON object body: 400 naming the field (unknown fields included). */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('Request body must be a JSON object (Content-Type: application/json)');
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  if (first?.code === 'unrecognized_keys') {
    const field = first.keys[0] ?? '';
    const hint = field === 'scope' ? '; keys created through the API always have scope inference' : '';
    throw badRequest(`${field}: unknown field${hint}`, { field });
  }
  const field = first?.path.map(String).join('.');
  throw badRequest(describeIssues(result.error.issues), field ? { field } : {});
}

export interface ListQuery {
  includeRevoked: boolean;
  offset: number;
}

/** `include_disabled` true|false (true also returns revoked keys), `offset` a non-negative integer. */
export function parseListQuery(query: Record<string, unknown>): ListQuery {
  const inc = query.include_disabled;
  if (inc !== undefined && inc !== 'true' && inc !== 'false') {
    throw badRequest('include_disabled: must be true or false', { field: 'include_disabled' });
  }
  const off = query.offset;
  if (off !== undefined && (typeof off !== 'string' || !/^\d{1,9}$/.test(off))) {
    throw badRequest('offset: must be a non-negative integer', { field: 'offset' });
  }
  return { includeRevoked: inc === 'true', offset: off === undefined ? 0 : Number(off) };
}

/** The governance fields of a parsed create/update body, as the key service takes them. */
export function governanceOf(body: {
  expires_at?: Date | null;
  include_byok_in_limit?: boolean;
  allowed_models?: string[];
  rate_limit_rpm?: number | null;
  rate_limit_tpm?: number | null;
  store_bodies?: boolean;
  team_id?: string | null;
}): KeyGovernanceInput {
  return {
    expiresAt: body.expires_at,
    includeByokInLimit: body.include_byok_in_limit,
    allowedModels: body.allowed_models,
    rateLimitRpm: body.rate_limit_rpm,
    rateLimitTpm: body.rate_limit_tpm,
    storeBodies: body.store_bodies,
    teamId: body.team_id,
  };
}
