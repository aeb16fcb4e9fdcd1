/**
 * Embedding wire formats: the same `WireFormat` interface, speaking each provider's embeddings
 * endpoint (the embeddings door's registry, doors/embeddings/). The canonical request is OpenAI's
 * embeddings body with `input` always a list (`{model, input: string[] | number[][], dimensions?,
 * user?}`); every format hands back `{data: [{index, embedding: number[]}], usage?: {prompt_tokens}}`
 * (usage only when the provider reports it), which the door prices and renders.
 */
import { AppError } from '@tollgate/errors';
import { azureEmbeddings } from './azure/embeddings';
import { bedrockEmbeddings } from './bedrock/embeddings';
import { geminiEmbeddings } from './gemini/embeddings';
import { wireFormatOf } from './index';
import { openaiEmbeddings } from './openai/embeddings';
import type { WireFormat, WireFormatName } from './wire-format';

const noEmbeddings: WireFormat = {
  ...wireFormatOf('anthropic'),
  prepare() {
    throw new AppError('bad_request', 'model: Anthropic providers have no embeddings API', {
      param: 'model',
    });
  },
};

const EMBEDDING_FORMATS: Readonly<Record<WireFormatName, WireFormat>> = {
  openai: openaiEmbeddings,
  azure: azureEmbeddings,
  gemini: geminiEmbeddings,
  bedrock: bedrockEmbeddings,
  anthropic: noEmbeddings,
};

export const embeddingFormatOf = (name: WireFormatName): WireFormat => EMBEDDING_FORMATS[name];
