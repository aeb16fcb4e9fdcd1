import { encode } from 'gpt-tokenizer';
import type { SimMessage } from './prompt-tokens';

/**
 * Deterministic completion text. The text is a sequence of "pieces", each exactly one o200k token,
 * chosen by a PRNG seeded from the prompt: the same prompt always yields the same text, and the
 * pieces are what the stream sends, one per content chunk. Pieces are plain ASCII words, so every
 * chunk is valid text on its own and re-tokenizing the whole text gives exactly the same count.
 */
const LOWER = `the model answer request token stream gateway provider simulated response latency price budget
  key limit usage cost data value system result output input message service route cache queue event
  record account credit spend period window check test case sample text word line note point step order
  time rate level state field name type list item part group set map node path host port server client
  is are was be can will may should would could must has have had do does did not and or but so if
  then when while for with from into over under about after before between through across within
  good fast slow simple clear small large new old first last next other same each every some many more
  most less few all any both only just also very well still even now here there this that these those
  it we you they one two three four five six seven eight nine ten`
  .split(/\s+/)
  .filter(Boolean);
const FIRST =
  `The This That It We You They Each Every Some A One Here There When While If Then So But And Now`
    .split(/\s+/)
    .filter(Boolean);

const isOneToken = (s: string) => encode(s).length === 1;

const words = LOWER.map((w) => ` ${w}`).filter(isOneToken);
const sentenceStarts = FIRST.map((w) => ` ${w}`).filter(isOneToken);
const textStarts = FIRST.filter(isOneToken);
const PERIOD = '.';

/** All pieces; a generated completion is a list of indexes into this table. */
export const PIECES: readonly string[] = [...words, ...sentenceStarts, ...textStarts, PERIOD];
/** Each piece pre-encoded as a JSON string literal, for building chunks without JSON.stringify. */
export const PIECES_JSON: readonly string[] = PIECES.map((p) => JSON.stringify(p));
const WORD0 = 0;
const START0 = words.length;
const TEXT_START0 = START0 + sentenceStarts.length;
const PERIOD_INDEX = PIECES.length - 1;

/** FNV-1a over the roles and text of the messages. */
export function promptSeed(messages: readonly SimMessage[]): number {
  let h = 0x811c9dc5;
  const mix = (s: string) => {
    for (let i = 0; i < s.length; i++) {
      h ^= s.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    h ^= 0x1f;
    h = Math.imul(h, 0x01000193);
  };
  for (const m of messages) {
    mix(m.role);
    const c = m.content;
    if (typeof c === 'string') mix(c);
    else if (Array.isArray(c)) {
      for (const part of c) {
        const text = (part as { text?: unknown } | null)?.text;
        if (typeof text === 'string') mix(text);
      }
    }
  }
  return h >>> 0;
}

/** mulberry32: a tiny deterministic PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Number of tokens generated when neither the request nor `sim.completion_tokens` fixes it: 16..48. */
export const defaultCompletionLength = (seed: number): number => 16 + (seed % 33);

/** `count` piece indexes derived from `seed`: sentences of 5..12 words ending with a period. */
export function generatePieces(seed: number, count: number): Uint16Array {
  const out = new Uint16Array(count);
  const rand = prng(seed);
  let left = 0; // words left in the current sentence
  for (let i = 0; i < count; i++) {
    if (left === 0) {
      // Start a sentence.
      out[i] =
        i === 0
          ? TEXT_START0 + Math.floor(rand() * textStarts.length)
          : START0 + Math.floor(rand() * sentenceStarts.length);
      left = 5 + Math.floor(rand() * 8);
    } else if (left === 1) {
      out[i] = PERIOD_INDEX;
      left = 0;
    } else {
      out[i] = WORD0 + Math.floor(rand() * words.length);
      left--;
    }
  }
  return out;
}

export function piecesText(pieces: Uint16Array): string {
  let s = '';
  for (const p of pieces) s += PIECES[p];
  return s;
}
