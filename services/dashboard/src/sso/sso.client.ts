import { AppError, badRequest } from '@tollgate/errors';
import type { Logger } from '@tollgate/logger';
import * as oidc from 'openid-client';
import type { SsoSettings } from './sso.config';

/** One sign-in started: what the browser must bring back (kept server-side, bound to a cookie). */
interface SsoStart {
  url: URL;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The identity the provider vouched for: the ID token's claims with the userinfo answer over them. */
export type SsoClaims = Record<string, unknown> & { sub: string };

export interface SsoClient {
  start(): Promise<SsoStart>;
  /** Checks the authorization response (state, PKCE, ID token signature, audience, nonce) and reads the claims. */
  finish(
    callbackUrl: URL,
    expected: { state: string; nonce: string; codeVerifier: string },
  ): Promise<SsoClaims>;
}

/** Codes of openid-client meaning "this response is not valid for this sign-in": the browser's fault, 400. */
const REFUSED_RESPONSE = new Set([
  'OAUTH_JWT_CLAIM_COMPARISON_FAILED',
  'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED',
  'OAUTH_JWT_TIMESTAMP_CHECK_FAILED',
  'OAUTH_INVALID_RESPONSE',
  'OAUTH_INVALID_REQUEST',
  'OAUTH_PARSE_ERROR',
]);

/** The provider's and the library's errors as the standard envelope: 400 for a refused response, else 502/503. */
function asAppError(err: unknown, logger: Logger | undefined): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof oidc.AuthorizationResponseError)
    return badRequest(`The identity provider refused the sign-in: ${err.error}`, { reason: 'sso_refused' });
  if (err instanceof oidc.ResponseBodyError && err.status < 500)
    return badRequest(`The identity provider refused the code: ${err.error}`, { reason: 'sso_code' });
  const code = (err as { code?: string }).code;
  if (code && REFUSED_RESPONSE.has(code)) {
    const message = (err as Error).message;
    return badRequest(`Sign-in response refused (${message}); start again`, { reason: 'sso_response' });
  }
  logger?.warn({ err, code }, 'identity provider unreachable or failing');
  return new AppError('service_unavailable', 'The identity provider is unreachable; try again later', {
    reason: 'sso_provider',
  });
}

/**
 * openid-client (authorization code + PKCE S256 + nonce). The provider's metadata is discovered at
 * the first sign-in and kept (a failed discovery is retried at the next one); plain-http issuers are
 * accepted outside production only (config refuses them there).
 */
export function createSsoClient(s: SsoSettings, logger?: Logger): SsoClient {
  let config: Promise<oidc.Configuration> | undefined;
  const configuration = () => {
    config ??= oidc
      .discovery(s.issuer, s.clientId, s.clientSecret, undefined, {
        execute: s.issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
        timeout: 10,
      })
      .catch((err) => {
        config = undefined;
        throw err;
      });
    return config;
  };

  return {
    async start() {
      try {
        const cfg = await configuration();
        const codeVerifier = oidc.randomPKCECodeVerifier();
        const state = oidc.randomState();
        const nonce = oidc.randomNonce();
        const url = oidc.buildAuthorizationUrl(cfg, {
          redirect_uri: s.redirectUrl,
          scope: s.scopes,
          code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
          code_challenge_method: 'S256',
          state,
          nonce,
        });
        return { url, state, nonce, codeVerifier };
      } catch (err) {
        throw asAppError(err, logger);
      }
    },

    async finish(callbackUrl, expected) {
      try {
        const cfg = await configuration();
        const tokens = await oidc.authorizationCodeGrant(cfg, callbackUrl, {
          pkceCodeVerifier: expected.codeVerifier,
          expectedState: expected.state,
          expectedNonce: expected.nonce,
          idTokenExpected: true,
        });
        const idClaims = tokens.claims();
        if (!idClaims) throw badRequest('The identity provider sent no ID token', { reason: 'sso_response' });
        let claims: SsoClaims = { ...idClaims, sub: idClaims.sub };
        if (cfg.serverMetadata().userinfo_endpoint) {
          const info = await oidc.fetchUserInfo(cfg, tokens.access_token, idClaims.sub);
          claims = { ...claims, ...info, sub: idClaims.sub };
        }
        return claims;
      } catch (err) {
        throw asAppError(err, logger);
      }
    },
  };
}
