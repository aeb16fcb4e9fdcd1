import { describe, expect, it } from 'vitest';
import { keyLimitExceeded } from './refusals';

describe('key_limit_exceeded message (issue 14, Low)', () => {
  it('does not claim the limit was reached (a request is also refused at $0 spent)', () => {
    const e = keyLimitExceeded('daily');
    expect(e.message).not.toMatch(/has reached/);
    expect(e.message).toMatch(/could exceed the key's daily spend limit/);
    expect(e.metadata).toMatchObject({ period: 'daily', limit_reset: 'daily' });
    expect(keyLimitExceeded(null).message).toMatch(/total spend limit/);
  });
});
