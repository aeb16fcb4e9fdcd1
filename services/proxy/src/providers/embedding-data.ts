/** Helpers of the embedding wire formats (providers/embeddings.ts). */
import { AppError } from '@tollgate/errors';

type Json = Record<string, unknown>;

/** A 400 for a format that takes text only (Gemini, Bedrock) when the input is token arrays. */
export function textInputs(body: Json, provider: string): string[] {
  const input = body.input as unknown[];
  if (input.every((i) => typeof i === 'string')) return input as string[];
  throw new AppError('bad_request', `input: ${provider} providers take text, not token arrays`, {
    param: 'input',
  });
}

/** `[{index, embedding}]` from a list of vectors, or null when one is not a list of numbers. */
export function dataOf(vectors: unknown[]): Json[] | null {
  const data: Json[] = [];
  for (let i = 0; i < vectors.length; i++) {
    const v = vectors[i];
    if (!Array.isArray(v) || (v.length > 0 && typeof v[0] !== 'number')) return null;
    data.push({ index: i, embedding: v });
  }
  return data;
}
