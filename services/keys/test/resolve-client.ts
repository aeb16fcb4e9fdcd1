import { type ServiceSigner, serviceTokenSource } from '@tollgate/auth';
import { type ResolvedKey, resolveKey as resolveKeyContract } from '@tollgate/contracts';
import { createServiceClient } from '@tollgate/http';

/**
 * One `POST /internal/keys/resolve` through the shared service client (tests and tools; the proxy
 * keeps a pooled client in its key resolver). Returns the record (disabled/revoked included; the
 * caller decides 401) or null for an unknown key. Throws an AppError on any other answer.
 */
export async function resolveKey(options: {
  keysUrl: string;
  /** The caller's identity (the keys service accepts resolve calls from the proxy only). */
  signer: ServiceSigner;
  digest: string;
  timeoutMs?: number;
}): Promise<ResolvedKey | null> {
  const keys = createServiceClient({
    service: 'keys',
    url: options.keysUrl,
    token: serviceTokenSource(options.signer, 'keys'),
    timeoutMs: options.timeoutMs ?? 3000,
    connections: 1,
  });
  try {
    const answer = await keys.call({
      method: resolveKeyContract.method,
      path: resolveKeyContract.path,
      body: { digest: options.digest },
      response: resolveKeyContract.response,
      nullOn404: true,
    });
    return answer?.data ?? null;
  } finally {
    await keys.close();
  }
}
