import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ProviderSim, SIM_AWS_CREDENTIALS, startProviderSim } from '@tollgate/provider-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedHeaders } from './signer';

// The signer's credentials: a named profile of the shared credentials file, or the AWS env vars; the
// simulator re-signs each request with its own credentials, so only the right ones get a 200.
let sim: ProviderSim;
let dir: string;
const saved = { ...process.env };

beforeAll(async () => {
  sim = await startProviderSim();
  dir = await mkdtemp(join(tmpdir(), 'tollgate-aws-'));
  const file = join(dir, 'credentials');
  await writeFile(
    file,
    `[sim]\naws_access_key_id = ${SIM_AWS_CREDENTIALS.accessKeyId}\naws_secret_access_key = ${SIM_AWS_CREDENTIALS.secretAccessKey}\n\n[stale]\naws_access_key_id = ${SIM_AWS_CREDENTIALS.accessKeyId}\naws_secret_access_key = not-the-secret\n`,
  );
  process.env.AWS_SHARED_CREDENTIALS_FILE = file;
  process.env.AWS_CONFIG_FILE = join(dir, 'config');
  delete process.env.AWS_ACCESS_KEY_ID;
  delete process.env.AWS_SECRET_ACCESS_KEY;
});
afterAll(async () => {
  process.env = saved;
  await sim?.close();
  await rm(dir, { recursive: true, force: true });
});

const body = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Hi' }] }] });
const path = '/model/amazon.nova-lite-v1%3A0/converse';

async function call(name: string, awsProfile: string | undefined): Promise<number> {
  const provider = { name, region: 'us-east-1', awsProfile, baseUrl: sim.url };
  const headers = await signedHeaders(provider, path, body, { 'content-type': 'application/json' });
  return (await fetch(`${sim.url}${path}`, { method: 'POST', headers, body })).status;
}

describe('Bedrock SigV4 signer', () => {
  it('signs with a named profile of the shared credentials file', async () => {
    expect(await call('profile-ok', 'sim')).toBe(200);
    expect(await call('profile-stale', 'stale')).toBe(403);
  });

  it('signs with the standard AWS environment variables, and fails over cleanly without any', async () => {
    await expect(call('env-none', undefined)).rejects.toMatchObject({ type: 'provider_error' });
    process.env.AWS_ACCESS_KEY_ID = SIM_AWS_CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = SIM_AWS_CREDENTIALS.secretAccessKey;
    expect(await call('env-ok', undefined)).toBe(200);
  });
});
