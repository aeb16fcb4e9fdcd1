import { execFileSync, spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { createSpendStore } from '../packages/spend/src/store';
const port = 17000 + Math.floor(Math.random() * 1000);
const srv = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 300));
const redis = new Redis({ port, enableAutoPipelining: true });
const store = createSpendStore(redis, { prefix: 'b:' });
const now = Date.now();
await store.beginRebuild({ keyId: 'k1', accountId: 'a1' }, now);
await store.loadKey('k1', now, { d: 'd2026-11-23', w: 'w2026-W48', m: 'm2026-11' }, [['m2026-11', 123456789012n]]);
await store.loadAccount('a1', now, { usageUnits: 98765432101n, creditsUnits: 10000000000000000n, postpaid: false, version: 1 });
const stats = () => execFileSync('redis-cli', ['-p', String(port), 'info', 'commandstats']).toString().split('\n').filter((l) => l.startsWith('cmdstat_evalsha')).join();
const N = 5000;
const t0 = performance.now();
for (let i = 0; i < N; i++) {
  const o = await store.admit({ keyId: 'k1', accountId: 'a1', requestId: `r${i}`, worstCaseUnits: 3840000n + BigInt(i), limitUnits: 1000000000000000n, period: 'm2026-11', now: Date.now() });
  if (o.code !== 'admitted') throw new Error(JSON.stringify(o));
  await store.settle({ keyId: 'k1', accountId: 'a1', requestId: `r${i}`, costUnits: 123456n, keyTracked: true, accountTracked: true, now: Date.now() });
  if (i % 50 === 49) await store.applyCommitted(Date.now(), [{ keyId: 'k1', totals: [['m2026-11', 123456789012n + BigInt(i)]], requestIds: Array.from({ length: 50 }, (_, j) => `r${i - j}`) }], [{ accountId: 'a1', usageUnits: 98765432101n + BigInt(i), requestIds: Array.from({ length: 50 }, (_, j) => `r${i - j}`) }]);
}
console.log('ms per admit+settle', ((performance.now() - t0) / N).toFixed(3));
console.log(stats());
const m = /calls=(\d+),usec=(\d+)/.exec(stats());
console.log('usec per evalsha', (Number(m![2]) / Number(m![1])).toFixed(2));
redis.disconnect(); srv.kill();
