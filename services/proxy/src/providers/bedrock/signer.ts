import { fromEnv } from '@aws-sdk/credential-provider-env';
import { fromIni } from '@aws-sdk/credential-provider-ini';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { CatalogProvider } from '@tollgate/catalog';
import { AppError } from '@tollgate/errors';

/**
 * SigV4 signing of Bedrock requests with the AWS SDK's own signer (`@smithy/signature-v4`, SHA-256 and
 * HMAC from `@smithy/hash-node` over node:crypto): no hand-written crypto. Credentials come from the standard AWS environment
 * variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) or, when the catalog provider
 * names `aws_profile`, from that profile of the shared config/credentials files (AWS_CONFIG_FILE,
 * AWS_SHARED_CREDENTIALS_FILE; SSO, role assumption and credential_process as the SDK resolves them).
 * Resolved credentials are kept until five minutes before they expire; one signer per provider.
 */
interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

const REFRESH_BEFORE_MS = 5 * 60_000;

/** The provider's credentials, resolved once and again shortly before they expire. */
function memoized(load: () => Promise<Credentials>): () => Promise<Credentials> {
  let current: Promise<Credentials> | null = null;
  let expiresAt = Number.POSITIVE_INFINITY;
  return () => {
    if (current === null || Date.now() >= expiresAt - REFRESH_BEFORE_MS) {
      const p = load();
      current = p;
      p.then(
        (c) => {
          expiresAt = c.expiration ? c.expiration.getTime() : Number.POSITIVE_INFINITY;
        },
        () => {
          if (current === p) current = null; // retried on the next request
        },
      );
    }
    return current;
  };
}

const signers = new Map<string, SignatureV4>();

function signerOf(provider: Pick<CatalogProvider, 'name' | 'region' | 'awsProfile'>): SignatureV4 {
  const cacheKey = `${provider.name}\u0000${provider.region}\u0000${provider.awsProfile ?? ''}`;
  let signer = signers.get(cacheKey);
  if (!signer) {
    const source = provider.awsProfile ? fromIni({ profile: provider.awsProfile }) : fromEnv();
    signer = new SignatureV4({
      credentials: memoized(() => source()),
      region: provider.region ?? 'us-east-1',
      service: 'bedrock',
      // The AWS SDK's Node hash (node:crypto), as its own Node runtime config uses: ~10× the pure-JS one.
      sha256: Hash.bind(null, 'sha256'),
    });
    signers.set(cacheKey, signer);
  }
  return signer;
}

/**
 * The headers of a signed `POST <path>` with `body` to the provider's base URL: the given headers plus
 * `host`, `x-amz-date`, `x-amz-content-sha256`, (`x-amz-security-token`) and `authorization`.
 * A provider whose credentials cannot be found fails like a rejected credential (502, failover).
 */
export async function signedHeaders(
  provider: Pick<CatalogProvider, 'name' | 'region' | 'awsProfile' | 'baseUrl'>,
  path: string,
  body: string,
  headers: Record<string, string>,
): Promise<Record<string, string>> {
  const url = new URL(provider.baseUrl);
  try {
    const signed = await signerOf(provider).sign({
      method: 'POST',
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path,
      query: {},
      headers: { ...headers, host: url.host },
      body,
    });
    return signed.headers;
  } catch (err) {
    throw new AppError(
      'provider_error',
      `Provider ${provider.name} has no usable AWS credentials (${(err as Error).name})`,
      { provider_name: provider.name },
      502,
    );
  }
}
