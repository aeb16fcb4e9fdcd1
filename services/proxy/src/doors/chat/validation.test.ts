import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { parseChatRequest } from './validation';

const base = () => ({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

function refusal(body: Record<string, unknown>): { type: string; message: string; field: unknown } {
  try {
    parseChatRequest(body);
  } catch (err) {
    if (err instanceof AppError) return { type: err.type, message: err.message, field: err.metadata.field };
    throw err;
  }
  throw new Error('accepted');
}

describe('parseChatRequest: features the catalog does not price', () => {
  it.each([
    ['audio', { audio: { voice: 'alloy', format: 'wav' } }],
    ['modalities', { modalities: ['text', 'audio'] }],
    ['modalities', { modalities: 'audio' }],
    ['web_search_options', { web_search_options: {} }],
  ])('refuses %s with 400 naming the field', (field, extra) => {
    const r = refusal({ ...base(), ...extra });
    expect(r.type).toBe('bad_request');
    expect(r.field).toBe(field);
    expect(r.message.startsWith(`${field}:`)).toBe(true);
  });

  it('refuses an input_audio content part, naming it', () => {
    const r = refusal({
      ...base(),
      messages: [
        { role: 'system', content: 'be brief' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is said here?' },
            { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
          ],
        },
      ],
    });
    expect(r).toMatchObject({ type: 'bad_request', field: 'messages.1.content.1' });
  });

  it('accepts text and image parts, modalities ["text"] and null fields', () => {
    const parsed = parseChatRequest({
      ...base(),
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'describe' },
            { type: 'image_url', image_url: { url: 'https://example.test/a.png' } },
          ],
        },
      ],
      modalities: ['text'],
      audio: null,
      web_search_options: null,
    });
    expect(parsed.model).toBe('openai/gpt-4o-mini');
  });
});
