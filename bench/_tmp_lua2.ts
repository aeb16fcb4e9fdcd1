import { execFileSync, spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { createSpendStore } from '../packages/spend/src/store';
import { scripts } from '../packages/spend/src/scripts';
const port = 17000 + Math.floor(Math.random() * 1000);
const srv = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 300));
const redis = new Redis({ port });
const store = createSpendStore(redis, { prefix: 'b:' });
const now = Date.now();
await store.beginRebuild({ keyId: 'k1', accountId: 'a1' }, now);
await store.loadKey('k1', now, { d: 'd2026-11-23', w: 'w2026-W48', m: 'm2026-11' }, [['m2026-11', 123456789012n]]);
await store.loadAccount('a1', now, { usageUnits: 98765432101n, creditsUnits: 10000000000000000n, postpaid: false, version: 1 });
const src = scripts.admit.source;
const variants: Record<string, string> = {
  full: src,
  afterHmget: src.replace("local k = {false", "do return {0,1,1,0,0} end\nlocal k = {false"),
  nothing: src.replace("local now = tonumber(ARGV[1])", "do return {0,1,1,0,0} end\nlocal now = tonumber(ARGV[1])"),
  nogc: src.replace(/\n  gc\(KEYS\[[12]\], now, every\)/g, ''),
  nohold: src.replace(/\n  hold\(KEYS\[[12]\], 'r:' \.\. req, worst, expires\)/g, ''),
  early: src.replace("local expires = now", "do return {0,1,1,0,0} end\nlocal expires = now"),
  top: src.replace("local staleKey", "do return {0,1,1,0,0} end\nlocal staleKey"),
};
for (const [name, s] of Object.entries(variants)) {
  execFileSync('redis-cli', ['-p', String(port), 'config', 'resetstat']);
  const sha = (await redis.call('SCRIPT', 'LOAD', s)) as string;
  for (let i = 0; i < 2000; i++) await redis.evalsha(sha, 2, 'b:spend:key:k1', 'b:spend:acct:a1', Date.now(), `r${name}${i}`, '3840000', '1000000000000000', 'm2026-11', 10000, 300000, 300000, 2000, 3024000);
  const st = execFileSync('redis-cli', ['-p', String(port), 'info', 'commandstats']).toString();
  console.log(name, /cmdstat_evalsha:calls=\d+,usec=\d+,usec_per_call=([\d.]+)/.exec(st)?.[1], 'fields', await redis.hlen('b:spend:key:k1'));
}
redis.disconnect(); srv.kill();
