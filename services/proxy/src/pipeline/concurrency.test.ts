import { describe, expect, it } from 'vitest';
import { CompletionSlots } from './concurrency';

const release = (slot: ReturnType<CompletionSlots['acquire']>): (() => void) => {
  if (typeof slot !== 'function') throw new Error(`refused: ${JSON.stringify(slot)}`);
  return slot;
};

describe('CompletionSlots', () => {
  it('caps one key, and frees its slot once however often release is called', () => {
    const slots = new CompletionSlots(2, 0);
    const a = release(slots.acquire('k1', 'acct'));
    release(slots.acquire('k1', 'acct'));
    expect(slots.acquire('k1', 'acct')).toEqual({ scope: 'key', limit: 2 });
    // Another key of the same account is not affected by k1's cap.
    release(slots.acquire('k2', 'acct'));
    a();
    a();
    expect(slots.keyInFlight('k1')).toBe(1);
    release(slots.acquire('k1', 'acct'));
    expect(slots.acquire('k1', 'acct')).toEqual({ scope: 'key', limit: 2 });
  });

  it('caps an account across all its keys, whatever the number of keys minted', () => {
    const slots = new CompletionSlots(2, 3);
    const held = [
      release(slots.acquire('k1', 'acme')),
      release(slots.acquire('k2', 'acme')),
      release(slots.acquire('k3', 'acme')),
    ];
    expect(slots.acquire('k4', 'acme')).toEqual({ scope: 'account', limit: 3 });
    // A refusal takes nothing: neither the key nor the account count moved.
    expect(slots.keyInFlight('k4')).toBe(0);
    expect(slots.accountInFlight('acme')).toBe(3);
    // Other accounts are unaffected.
    release(slots.acquire('other-key', 'other'));
    held[0]?.();
    release(slots.acquire('k4', 'acme'));
    expect(slots.accountInFlight('acme')).toBe(3);
  });

  it('reports the key cap first when both are reached', () => {
    const slots = new CompletionSlots(1, 1);
    release(slots.acquire('k1', 'acme'));
    expect(slots.acquire('k1', 'acme')).toEqual({ scope: 'key', limit: 1 });
    expect(slots.acquire('k2', 'acme')).toEqual({ scope: 'account', limit: 1 });
  });

  it('counts nothing for a cap set to 0 and forgets ids with nothing in flight', () => {
    const slots = new CompletionSlots(0, 0);
    const all = Array.from({ length: 1000 }, () => release(slots.acquire('k', 'a')));
    expect(slots.keyInFlight('k')).toBe(0);
    expect(slots.accountInFlight('a')).toBe(0);
    for (const r of all) r();
    const capped = new CompletionSlots(5, 5);
    const r = release(capped.acquire('k', 'a'));
    r();
    expect((capped as unknown as { perKey: Map<string, number> }).perKey.size).toBe(0);
    expect((capped as unknown as { perAccount: Map<string, number> }).perAccount.size).toBe(0);
  });
});
