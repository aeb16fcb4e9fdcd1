/**
 * Service-token cost (issue 14, service identity): what signing and verifying the Ed25519 service
 * tokens of @tollgate/auth costs, and what the verified-token cache saves.
 *
 *   pnpm exec tsx bench/service-token.ts            (BENCH_ITERATIONS=5000 by default)
 *
 * Measures, in µs per operation (median of 5 runs):
 * Signing and verifying are `jose`'s (asynchronous: WebCrypto); each operation is awaited.
 *   sign             one token (the proxy signs a caller-identity token per forwarded account call;
 *                    service tokens are cached by the token source and re-signed every 30 s)
 *   verify, cold     a token the callee has not seen (one Ed25519 verification + JSON parse)
 *   verify, cached   the same token again (what keys' resolve route pays per call: the proxy
 *                    re-uses its token for 30 s)
 * No servers needed. Prints a table.
 */
import { devServiceSigner, devServiceVerifier } from '@tollgate/auth';

const N = Number(process.env.BENCH_ITERATIONS ?? 5000);

/** µs per operation, median of 5 runs of N operations each (each awaited, as a route awaits it). */
async function measure(label: string, run: (i: number) => Promise<unknown>, setup?: () => void) {
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    setup?.();
    const t = performance.now();
    for (let i = 0; i < N; i++) await run(i);
    runs.push(((performance.now() - t) * 1000) / N);
  }
  runs.sort((a, b) => a - b);
  return { label, us: runs[2]! };
}

const proxy = devServiceSigner('proxy');
const claims = (i: number) =>
  ({
    kind: 'key',
    keyId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    accountId: '00000000-0000-4000-8000-000000000000',
    scope: 'inference',
  }) as const;

// Warm-up (JIT, key objects).
for (let i = 0; i < 500; i++) await devServiceVerifier('keys').verify(await proxy.sign('keys', claims(i)));

const tokens = await Promise.all(Array.from({ length: N }, (_, i) => proxy.sign('keys', claims(i))));
// A fresh verifier per run: every token is new to it.
let cold = devServiceVerifier('keys');
const cached = devServiceVerifier('keys');
const token = await proxy.sign('keys');
await cached.verify(token);
const results = [
  await measure('sign', (i) => proxy.sign('keys', claims(i))),
  await measure(
    'verify, cold',
    (i) => cold.verify(tokens[i]!),
    () => {
      cold = devServiceVerifier('keys');
    },
  ),
  await measure('verify, cached', () => cached.verify(token)),
];

console.log(`service tokens, ${N} operations per run, median of 5 runs (node ${process.version})`);
for (const r of results) console.log(`  ${r.label.padEnd(16)} ${r.us.toFixed(2).padStart(8)} µs`);
