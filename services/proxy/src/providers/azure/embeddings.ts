/**
 * Azure OpenAI embeddings: OpenAI's body and answer at
 * `<base>/openai/deployments/<deployment>/embeddings?api-version=…` (the chat adapter's key headers).
 */
import { embeddingsBody, readEmbeddings } from '../openai/embeddings';
import type { WireFormat } from '../wire-format';
import { azure, deploymentPath } from './index';

export const azureEmbeddings: WireFormat = {
  ...azure,
  prepare: (body) => body,
  requestBody: (prepared, target) =>
    embeddingsBody(prepared, target.upstreamModel, target.provider.simulator),
  async attempt(input) {
    const chat = await (azure.attempt as NonNullable<typeof azure.attempt>)(input);
    return {
      path: deploymentPath(input.base.path, input.provider, input.upstreamModel, 'embeddings'),
      headers: chat.headers,
    };
  },
  readResponse: readEmbeddings,
};
