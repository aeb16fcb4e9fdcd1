/**
 * Azure OpenAI (`format: azure`): OpenAI's chat-completions body and answers (the OpenAI adapter's
 * request fields, usage and error classification), sent to a deployment:
 * `POST <base>/openai/deployments/<deployment>/chat/completions?api-version=<api_version>`, the key in
 * the `api-key` header, or `Authorization: Bearer` for an Entra ID token (catalog `auth: bearer`).
 * A 404 (deployment, resource or api-version unknown) is `unavailable`: the catalog's mistake, not the caller's.
 * The catalog provider names the resource (`resource` or `base_url`) and `api_version`; a model's
 * provider entry names the deployment (`model`).
 */
import type { CatalogProvider } from '@tollgate/catalog';
import { chatCompletionsBody } from '../openai/request';
import { failureOfStatus, providerRefusal } from '../provider-error';
import type { WireFormat } from '../wire-format';

const basePath = (baseUrl: string): string => new URL(baseUrl).pathname.replace(/\/+$/, '');

/** `<base>/openai/deployments/<deployment>/<operation>?api-version=<version>`. */
export function deploymentPath(
  base: string,
  provider: Pick<CatalogProvider, 'apiVersion'>,
  deployment: string,
  operation: 'chat/completions' | 'embeddings',
): string {
  const version = encodeURIComponent(provider.apiVersion ?? '');
  return `${base}/openai/deployments/${encodeURIComponent(deployment)}/${operation}?api-version=${version}`;
}

/** The key as Azure reads it: `api-key`, or a bearer token (catalog `auth: bearer`). */
function azureHeaders(provider: Pick<CatalogProvider, 'auth'>, apiKey: string | undefined) {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (apiKey) {
    if (provider.auth === 'bearer') headers.authorization = `Bearer ${apiKey}`;
    else headers['api-key'] = apiKey;
  }
  return headers;
}

export const azure: WireFormat = {
  name: 'azure',
  path: basePath,
  headers: (apiKey) => azureHeaders({ auth: 'api-key' }, apiKey),
  prepare: (body) => body,
  requestBody: (original, target, _original, stream) =>
    chatCompletionsBody(original, target.provider, target.upstreamModel, stream),
  attempt: ({ base, provider, upstreamModel, apiKey }) => ({
    path: deploymentPath(base.path, provider, upstreamModel, 'chat/completions'),
    headers: provider.auth === 'bearer' ? azureHeaders(provider, apiKey) : base.headers,
  }),
  readResponse: (json) => json,
  streamBridge: () => null,
  classifyHttpError(status, bodyText, providerName) {
    const { error, detail } = providerRefusal(status, bodyText, providerName);
    // A 404 is the catalog's deployment, resource or api-version (Azure answers "Resource not found"
    // or DeploymentNotFound): the gateway's configuration, so another provider may serve the request.
    return { failure: status === 404 ? 'unavailable' : failureOfStatus(status), summary: error, detail };
  },
};
