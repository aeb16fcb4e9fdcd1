/**
 * Provider wire formats (one adapter per catalog `format`, wire-format.ts): the pipeline picks the
 * adapter of the candidate it tries and never branches on the format itself.
 */
import { anthropic } from './anthropic';
import { openai } from './openai';
import type { WireFormat, WireFormatName } from './wire-format';

const WIRE_FORMATS: Readonly<Record<WireFormatName, WireFormat>> = { openai, anthropic };

/** The adapter of a catalog provider's `format` (OpenAI when absent). */
export const wireFormatOf = (format: WireFormatName | undefined): WireFormat =>
  WIRE_FORMATS[format ?? 'openai'];
