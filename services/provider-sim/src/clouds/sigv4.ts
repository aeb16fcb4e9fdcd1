import type { IncomingMessage } from 'node:http';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { awsError } from './cloud-error';

/**
 * SigV4 verification as AWS does it, with the AWS SDK's own signer: the request as received (method,
 * host, path, the headers named in SignedHeaders, the exact body bytes) is signed again with the
 * simulator's credentials at the request's `x-amz-date`, and the signatures must match. Also checked:
 * the access key id (403 UnrecognizedClientException), the credential scope (region, service
 * `bedrock`), and a clock skew of at most 5 minutes (403 "Signature expired").
 */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** The region requests must be scoped to (default us-east-1). */
  region?: string;
}

/** The simulator's default AWS credentials (tests put them in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY). */
export const SIM_AWS_CREDENTIALS: AwsCredentials = Object.freeze({
  accessKeyId: 'AKIASIMULATOR0000000',
  secretAccessKey: 'simulator/secret/access/key/0000000000',
  region: 'us-east-1',
});

const AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;
const MAX_SKEW_MS = 5 * 60_000;

function amzDate(v: string): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(v);
  return m ? new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!)) : null;
}

const invalid = () =>
  awsError(
    403,
    'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
    'InvalidSignatureException',
  );

/** Throws the AWS 403 a wrongly signed request gets. */
export async function verifySigV4(req: IncomingMessage, body: Buffer, creds: AwsCredentials): Promise<void> {
  const header = req.headers.authorization;
  const m = typeof header === 'string' ? AUTH.exec(header) : null;
  if (!m) throw awsError(403, 'Missing Authentication Token', 'MissingAuthenticationTokenException');
  const [, keyId, day, region, service, signedList] = m as unknown as string[];
  if (keyId !== creds.accessKeyId)
    throw awsError(
      403,
      'The security token included in the request is invalid.',
      'UnrecognizedClientException',
    );
  if (service !== 'bedrock' || region !== (creds.region ?? 'us-east-1'))
    throw awsError(
      403,
      `Credential should be scoped to a valid region and service 'bedrock'.`,
      'InvalidSignatureException',
    );
  const date = amzDate(String(req.headers['x-amz-date'] ?? ''));
  if (!date || date.toISOString().slice(0, 10).replaceAll('-', '') !== day) throw invalid();
  if (Math.abs(Date.now() - date.getTime()) > MAX_SKEW_MS)
    throw awsError(
      403,
      'Signature expired: the request time is more than 5 minutes from the current time.',
      'InvalidSignatureException',
    );
  if (creds.sessionToken !== undefined && req.headers['x-amz-security-token'] !== creds.sessionToken)
    throw awsError(
      403,
      'The security token included in the request is invalid.',
      'UnrecognizedClientException',
    );
  const headers: Record<string, string> = {};
  for (const name of (signedList as string).split(';')) {
    const v = req.headers[name];
    if (v === undefined) throw invalid();
    headers[name] = Array.isArray(v) ? v.join(',') : v;
  }
  // The payload hash is recomputed from the bytes received (the signer re-adds the header), so a body
  // changed after signing fails even when its x-amz-content-sha256 header was left as it was.
  delete headers['x-amz-content-sha256'];
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const signer = new SignatureV4({
    credentials: creds,
    region: region as string,
    service: 'bedrock',
    sha256: Sha256,
  });
  const host = headers.host ?? '';
  const signed = await signer.sign(
    {
      method: req.method ?? 'POST',
      protocol: 'http:',
      hostname: host.replace(/:\d+$/, ''),
      path: q === -1 ? url : url.slice(0, q),
      query: Object.fromEntries(new URLSearchParams(q === -1 ? '' : url.slice(q + 1))),
      headers,
      body,
    },
    { signingDate: date },
  );
  if (signed.headers.authorization !== header) throw invalid();
}
