import { execFileSync, spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { createSpendStore } from '../packages/spend/src/store';
import { scripts } from '../packages/spend/src/scripts';
const port = 17000 + Math.floor(Math.random() * 1000);
const srv = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no', '--slowlog-log-slower-than', '0', '--slowlog-max-len', '100000'], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 300));
const redis = new Redis({ port, enableAutoPipelining: true });
const store = createSpendStore(redis, { prefix: 'b:' });
const now = Date.now();
await store.beginRebuild({ keyId: 'k1', accountId: 'a1' }, now);
await store.loadKey('k1', now, { d: 'd2026-11-23', w: 'w2026-W48', m: 'm2026-11' }, [['m2026-11', 123456789012n]]);
await store.loadAccount('a1', now, { usageUnits: 98765432101n, creditsUnits: 10000000000000000n, postpaid: false, version: 1 });
const N = 2000;
for (let i = 0; i < N; i++) {
  await store.admit({ keyId: 'k1', accountId: 'a1', requestId: `r${i}`, worstCaseUnits: 3840000n + BigInt(i), limitUnits: 1000000000000000n, period: 'm2026-11', now: Date.now() });
  await store.settle({ keyId: 'k1', accountId: 'a1', requestId: `r${i}`, costUnits: 123456n, keyTracked: true, accountTracked: true, now: Date.now() });
  if (i % 50 === 49) await store.applyCommitted(Date.now(), [{ keyId: 'k1', totals: [['m2026-11', 123456789012n + BigInt(i)]], requestIds: Array.from({ length: 50 }, (_, j) => `r${i - j}`) }], [{ accountId: 'a1', usageUnits: 98765432101n + BigInt(i), requestIds: Array.from({ length: 50 }, (_, j) => `r${i - j}`) }]);
}
const log = (await redis.call('SLOWLOG', 'GET', '100000')) as Array<[number, number, number, string[]]>;
const by = new Map<string, number[]>();
const names = Object.fromEntries(Object.entries(scripts).map(([k, v]) => [v.sha, k]));
for (const [, , us, args] of log) { const k = args[0] === 'EVALSHA' || args[0] === 'evalsha' ? names[args[1] as string] ?? args[1] : args[0]; by.set(k, [...(by.get(k) ?? []), us]); }
for (const [k, v] of by) { v.sort((a, b) => a - b); console.log(k, 'n', v.length, 'avg', (v.reduce((a, b) => a + b, 0) / v.length).toFixed(1), 'p50', v[v.length >> 1], 'max', v.at(-1)); }
console.log('key hash fields', await redis.hlen('b:spend:key:k1'), 'acct', await redis.hlen('b:spend:acct:a1'));
redis.disconnect(); srv.kill();
