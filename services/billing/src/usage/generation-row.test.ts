import { describe, expect, it } from 'vitest';
import { usageEvent } from '../../test/testing';
import { toGenerationRow } from './generation-row';

describe('toGenerationRow', () => {
  it('maps an event to its record, absent optional fields as null and no attempts as []', () => {
    const e = usageEvent({
      withheld_tools: [],
      tokens: { prompt: 1, completion: 2, cached: 3, cache_write: 4, reasoning: 5 },
    });
    const row = toGenerationRow(e, '0.001');
    expect(row).toMatchObject({
      id: e.id,
      total_cost: '0.001',
      http_referer: null,
      api_type: null,
      session_id: null,
      end_user: null,
      withheld_tools: null,
      attempts: [],
      tokens_prompt: 1,
      tokens_completion: 2,
      tokens_cached: 3,
      tokens_cache_write: 4,
      tokens_reasoning: 5,
      created_at: e.started_at,
      finished_at: e.finished_at,
    });
  });

  it('keeps the optional fields an event carries', () => {
    const e = usageEvent({
      withheld_tools: ['web'],
      api_type: 'messages',
      session_id: 's',
      end_user: 'u',
      http_referer: 'r',
    });
    expect(toGenerationRow(e, '1')).toMatchObject({
      withheld_tools: ['web'],
      api_type: 'messages',
      session_id: 's',
      end_user: 'u',
      http_referer: 'r',
    });
  });
});
