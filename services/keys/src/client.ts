import { SERVICE_TOKEN_HEADER, signServiceToken } from '@tollgate/auth';
import type { CachedKey } from '@tollgate/key-cache';

/**
 * The proxy's side of `POST /internal/keys/resolve`: call it when the key cache answers `miss` or
 * `pending`, or when Redis is unreachable. Returns the record (disabled/revoked included; the caller
 * decides 401) or null for an unknown key. Throws on any other answer.
 */
export async function resolveKey(options: {
  keysUrl: string;
  secret: string;
  digest: string;
  service?: string;
  timeoutMs?: number;
}): Promise<CachedKey | null> {
  const res = await fetch(`${options.keysUrl}/internal/keys/resolve`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      [SERVICE_TOKEN_HEADER]: signServiceToken(
        { kind: 'service', service: options.service ?? 'proxy' },
        options.secret,
      ),
    },
    body: JSON.stringify({ digest: options.digest }),
    signal: AbortSignal.timeout(options.timeoutMs ?? 3000),
  });
  if (res.status === 404) return null;
  if (!res.ok) throw new Error(`keys resolve answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { data: CachedKey }).data;
}
