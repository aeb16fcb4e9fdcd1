import { generateKeyPairSync } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createServiceSigner,
  createServiceVerifier,
  DEV_SERVICE_KEYS,
  DEV_SERVICE_PUBLIC_KEYS,
  devServiceSigner,
  devServiceVerifier,
  generateServiceKeyPair,
  isDevServiceKey,
  keyTokenSource,
  MAX_SERVICE_TOKEN_TTL_SECONDS,
  parsePrivateKey,
  parsePublicKeys,
  SERVICE_NAMES,
  serviceTokenSource,
} from './index';

afterEach(() => {
  vi.useRealTimers();
});

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

describe('service tokens (Ed25519, issue 14)', () => {
  it('carry the caller (iss) and the callee (aud); a callee accepts only tokens made for it', async () => {
    const token = await devServiceSigner('dashboard').sign('billing');
    const [, payload] = token.split('.');
    expect(JSON.parse(Buffer.from(payload!, 'base64url').toString())).toMatchObject({
      iss: 'dashboard',
      aud: 'billing',
      kind: 'service',
      sub: 'dashboard',
    });
    expect(await devServiceVerifier('billing').verify(token)).toEqual({
      kind: 'service',
      caller: 'dashboard',
    });
    expect(await devServiceVerifier('keys').verify(token)).toBeNull();
  });

  it('refuses unknown keys, untrusted callers, tampering, other algorithms and garbage', async () => {
    const stranger = createServiceSigner('admin', generateKeyPairSync('ed25519').privateKey);
    const billing = devServiceVerifier('billing');
    expect(await billing.verify(await stranger.sign('billing'))).toBeNull();
    // A callee trusting only the proxy refuses the (valid) admin token.
    const onlyProxy = createServiceVerifier('billing', `proxy=${DEV_SERVICE_KEYS.proxy.publicKey}`);
    expect(await onlyProxy.verify(await devServiceSigner('admin').sign('billing'))).toBeNull();
    expect(await onlyProxy.verify(await devServiceSigner('proxy').sign('billing'))).toEqual({
      kind: 'service',
      caller: 'proxy',
    });

    const good = await devServiceSigner('admin').sign('billing');
    const [h, p, s] = good.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    expect(await billing.verify(`${h}.${b64({ ...claims, iss: 'proxy' })}.${s}`)).toBeNull();
    expect(await billing.verify(`${b64({ alg: 'none', typ: 'JWT' })}.${p}.`)).toBeNull();
    expect(await billing.verify(`${b64({ alg: 'HS256', typ: 'JWT' })}.${p}.${s}`)).toBeNull();
    for (const junk of ['', 'a.b', 'a.b.c', `${h}.${p}`, `${h}.!!!.${s}`, 'x'.repeat(5000)]) {
      expect(await billing.verify(junk)).toBeNull();
    }
  });

  it('refuses expired tokens, tokens from the future and lifetimes beyond the maximum', async () => {
    const admin = devServiceSigner('admin');
    const billing = devServiceVerifier('billing');
    expect(await billing.verify(await admin.sign('billing', { kind: 'service' }, -1))).toBeNull();
    expect(
      await billing.verify(
        await admin.sign('billing', { kind: 'service' }, MAX_SERVICE_TOKEN_TTL_SECONDS + 1),
      ),
    ).toBeNull();
    vi.useFakeTimers({ now: Date.now() + 120_000 });
    const future = await admin.sign('billing');
    vi.useRealTimers();
    expect(await billing.verify(future)).toBeNull();
  });

  it('caches a verified token until it expires, then refuses it', async () => {
    vi.useFakeTimers({ now: new Date('2026-11-23T10:00:00Z') });
    const token = await devServiceSigner('proxy').sign('keys', { kind: 'service' }, 60);
    const keys = devServiceVerifier('keys');
    expect(await keys.verify(token)).toEqual({ kind: 'service', caller: 'proxy' });
    vi.setSystemTime(new Date('2026-11-23T10:00:59Z'));
    expect(await keys.verify(token)).toEqual({ kind: 'service', caller: 'proxy' });
    vi.setSystemTime(new Date('2026-11-23T10:01:00Z'));
    expect(await keys.verify(token)).toBeNull();
  });

  it('caches at most cacheSize tokens and still verifies beyond that', async () => {
    const keys = createServiceVerifier('keys', DEV_SERVICE_PUBLIC_KEYS, { cacheSize: 4 });
    const proxy = devServiceSigner('proxy');
    const tokens = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        proxy.sign('keys', {
          kind: 'key',
          keyId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
          accountId: '00000000-0000-4000-8000-000000000000',
          scope: 'inference',
        }),
      ),
    );
    for (const t of tokens) expect((await keys.verify(t))?.caller).toBe('proxy');
    for (const t of tokens) expect((await keys.verify(t))?.kind).toBe('key');
  });

  it('key claims round-trip; the token source re-signs half-way through the lifetime', async () => {
    const claims = {
      kind: 'key',
      keyId: '11111111-1111-4111-8111-111111111111',
      accountId: '22222222-2222-4222-8222-222222222222',
      scope: 'management',
    } as const;
    expect(
      await devServiceVerifier('billing').verify(await devServiceSigner('proxy').sign('billing', claims)),
    ).toEqual({
      ...claims,
      caller: 'proxy',
    });
    vi.useFakeTimers({ now: new Date('2026-11-23T10:00:00Z') });
    const source = serviceTokenSource(devServiceSigner('proxy'), 'keys', 60);
    const first = source();
    vi.setSystemTime(new Date('2026-11-23T10:00:29Z'));
    expect(source()).toBe(first);
    vi.setSystemTime(new Date('2026-11-23T10:00:31Z'));
    expect(source()).not.toBe(first);
  });

  it('caches a caller-identity token per key for half its life, for one callee', async () => {
    vi.useFakeTimers({ now: new Date('2026-11-23T10:00:00Z') });
    const source = keyTokenSource(devServiceSigner('proxy'), 'billing', { max: 2 });
    const a = { kind: 'key', keyId: 'k1', accountId: 'a1', scope: 'inference' } as const;
    const first = source(a);
    expect(await devServiceVerifier('billing').verify(await first)).toEqual({ ...a, caller: 'proxy' });
    expect(await devServiceVerifier('keys').verify(await first)).toBeNull();
    expect(source({ ...a })).toBe(first);
    // Another key, account or scope never gets this key's token.
    const other = source({ ...a, keyId: 'k2' });
    expect(other).not.toBe(first);
    expect(await devServiceVerifier('billing').verify(await other)).toMatchObject({ keyId: 'k2' });
    expect(
      await devServiceVerifier('billing').verify(await source({ ...a, scope: 'management' })),
    ).toMatchObject({
      keyId: 'k1',
      scope: 'management',
    });
    expect(await devServiceVerifier('billing').verify(await source({ ...a, accountId: 'a2' }))).toMatchObject(
      {
        keyId: 'k1',
        accountId: 'a2',
      },
    );
    vi.setSystemTime(new Date('2026-11-23T10:00:29Z'));
    const k2 = source({ ...a, keyId: 'k2' });
    expect(await devServiceVerifier('billing').verify(await k2)).toMatchObject({ keyId: 'k2' });
    vi.setSystemTime(new Date('2026-11-23T10:00:31Z'));
    const renewed = source(a);
    expect(renewed).not.toBe(first);
    expect(await devServiceVerifier('billing').verify(await renewed)).toEqual({ ...a, caller: 'proxy' });
  });

  it('parses keys as base64 DER or PEM and knows the development keys in either form', async () => {
    const own = generateServiceKeyPair();
    expect(isDevServiceKey(parsePrivateKey(own.privateKey))).toBe(false);
    for (const name of SERVICE_NAMES) {
      const pem = `-----BEGIN PRIVATE KEY-----\n${DEV_SERVICE_KEYS[name].privateKey}\n-----END PRIVATE KEY-----\n`;
      expect(isDevServiceKey(parsePrivateKey(pem))).toBe(true);
    }
    const list = parsePublicKeys(DEV_SERVICE_PUBLIC_KEYS);
    expect([...list.keys()]).toEqual([...SERVICE_NAMES]);
    expect([...list.values()].every(isDevServiceKey)).toBe(true);
    expect(() => parsePublicKeys('root=abc')).toThrow(/not a service name/);
    expect(() => parsePrivateKey('nope')).toThrow(/not a private key/);
  });

  it('are standard EdDSA JWTs: jose reads ours with the public key alone, and we accept one jose signed', async () => {
    const token = await devServiceSigner('proxy').sign('keys');
    const { payload, protectedHeader } = await jwtVerify(
      token,
      parsePublicKeys(DEV_SERVICE_PUBLIC_KEYS).get('proxy')!,
      {
        audience: 'keys',
        issuer: 'proxy',
      },
    );
    expect(protectedHeader).toEqual({ alg: 'EdDSA', typ: 'JWT' });
    expect(payload.exp! - payload.iat!).toBe(60);
    const iat = Math.floor(Date.now() / 1000);
    const foreign = await new SignJWT({ kind: 'service', sub: 'admin' })
      .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT' })
      .setIssuer('admin')
      .setAudience('billing')
      .setIssuedAt(iat)
      .setExpirationTime(iat + 30)
      .sign(parsePrivateKey(DEV_SERVICE_KEYS.admin.privateKey));
    expect(await devServiceVerifier('billing').verify(foreign)).toEqual({ kind: 'service', caller: 'admin' });
    // A header with anything more (a key id here) is refused before its signature is checked.
    const withKid = await new SignJWT({ kind: 'service', sub: 'admin' })
      .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT', kid: 'x' })
      .setIssuer('admin')
      .setAudience('billing')
      .setIssuedAt(iat)
      .setExpirationTime(iat + 30)
      .sign(parsePrivateKey(DEV_SERVICE_KEYS.admin.privateKey));
    expect(await devServiceVerifier('billing').verify(withKid)).toBeNull();
  });

  it('a token source whose signature failed signs again on the next call (no cached failure)', async () => {
    let fail = true;
    const real = devServiceSigner('proxy');
    const flaky = {
      name: real.name,
      sign: (...args: Parameters<typeof real.sign>) =>
        fail ? Promise.reject(new Error('signing failed')) : real.sign(...args),
    };
    const service = serviceTokenSource(flaky, 'keys');
    const key = keyTokenSource(flaky, 'billing');
    const claims = { kind: 'key', keyId: 'k1', accountId: 'a1', scope: 'inference' } as const;
    await expect(service()).rejects.toThrow('signing failed');
    await expect(key(claims)).rejects.toThrow('signing failed');
    fail = false;
    expect(await devServiceVerifier('keys').verify(await service())).toEqual({
      kind: 'service',
      caller: 'proxy',
    });
    expect(await devServiceVerifier('billing').verify(await key(claims))).toEqual({
      ...claims,
      caller: 'proxy',
    });
  });
});
