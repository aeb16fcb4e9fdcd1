import { devServiceSigner, digestKey, SERVICE_TOKEN_HEADER } from '@tollgate/auth';
import type { CachedKey } from '@tollgate/key-cache';
import { expect } from 'vitest';
import { resolveKey } from './resolve-client';
import type { TestKey, TestKeysService } from './testing';

/** Test-only HTTP helper: a failing status assertion prints the whole response. */
export interface ApiResponse {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are inspected freely
  body: any;
}

export async function api(
  t: TestKeysService,
  method: string,
  path: string,
  options: {
    as?: Pick<TestKey, 'id' | 'accountId' | 'scope'> | null;
    token?: string;
    body?: unknown;
    raw?: string;
    contentType?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...options.headers };
  const token =
    options.token ??
    (options.as === null ? undefined : await t.callerToken(options.as ?? t.account.managementKey));
  if (token !== undefined) headers[SERVICE_TOKEN_HEADER] = token;
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  const res = await fetch(`${t.url}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed };
}

export function expectStatus(res: ApiResponse, status: number) {
  expect(res.status, `HTTP ${res.status}: ${JSON.stringify(res.body)}`).toBe(status);
}

export function expectError(res: ApiResponse, status: number, errorType: string, messagePattern?: RegExp) {
  expectStatus(res, status);
  expect(res.body.error, JSON.stringify(res.body)).toMatchObject({
    code: status,
    metadata: { error_type: errorType },
  });
  expect(typeof res.body.error.message).toBe('string');
  if (messagePattern) expect(res.body.error.message).toMatch(messagePattern);
}

/**
 * What the proxy does on every request: one cache read; on miss or pending (or Redis down) ask the
 * keys service. Returns the record the proxy would authorise with, or null (unknown key).
 */
export async function proxyLookup(t: TestKeysService, key: string): Promise<CachedKey | null> {
  const digest = digestKey(key);
  const cached = await t.service.runtime.cache.get(digest);
  if (cached.state === 'hit') return cached.key;
  if (cached.state === 'absent') return null;
  return resolveKey({ keysUrl: t.url, signer: devServiceSigner('proxy'), digest });
}

/** Authorises like the proxy: active = neither disabled nor revoked. */
export const isActive = (k: CachedKey | null) => Boolean(k && !k.disabled && !k.revoked);
