/**
 * Provider wire formats (one adapter per catalog `format`, wire-format.ts): the pipeline picks the
 * adapter of the candidate it tries and never branches on the format itself.
 */
import { anthropic } from './anthropic';
import { azure } from './azure';
import { bedrock } from './bedrock';
import { gemini } from './gemini';
import { openai } from './openai';
import type { AttemptInput, UpstreamRequest, WireFormat, WireFormatName } from './wire-format';

const WIRE_FORMATS: Readonly<Record<WireFormatName, WireFormat>> = {
  openai,
  anthropic,
  gemini,
  azure,
  bedrock,
};

/** The adapter of a catalog provider's `format` (OpenAI when absent). */
export const wireFormatOf = (format: WireFormatName | undefined): WireFormat =>
  WIRE_FORMATS[format ?? 'openai'];

/**
 * One attempt's path and headers: the provider's (`input.base`, built once), or those its wire format
 * builds for the model, the stream flag and the body (WireFormat.attempt).
 */
export function attemptRequest(input: AttemptInput): UpstreamRequest | Promise<UpstreamRequest> {
  const format = wireFormatOf(input.provider.format);
  return format.attempt ? format.attempt(input) : input.base;
}
