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
export function attemptRequest(
  format: WireFormat,
  input: AttemptInput,
): UpstreamRequest | Promise<UpstreamRequest> {
  return format.attempt ? format.attempt(input) : input.base;
}

/** The wire format of `name` as `door` speaks it (its own registry, e.g. embeddings, else chat's). */
export const formatFor = (
  door: { wireFormat?(name: WireFormatName): WireFormat },
  name: WireFormatName,
): WireFormat => door.wireFormat?.(name) ?? wireFormatOf(name);
