import { safeText } from '@tollgate/errors';
import { z } from 'zod';

/**
 * One declaration per field, two compiled forms: `zod` (the authority: validates, repairs text,
 * names the failing field) and `plain`, a fast check that is true only for a value `zod` accepts and
 * returns unchanged (no key it would strip, no text it would rewrite). Billing uses the value as
 * decoded when `plain` holds (no zod pass: most of a worker's decode cost) and asks zod otherwise.
 * Every builder's `plain` is at most as permissive as its `zod` (event-fields.test.ts checks each).
 */
export interface Field<Z extends z.ZodType = z.ZodType> {
  zod: Z;
  plain: (value: unknown) => boolean;
  /** May be absent from its object. */
  optional?: true;
}

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
/** `String.prototype.isWellFormed` (ES2024; the workspace's lib is ES2023). */
const isWellFormed = (s: string) => (s as string & { isWellFormed(): boolean }).isWellFormed();
/** Text the `text` transform leaves unchanged: no NUL, no lone surrogate. */
const isText = (v: unknown): v is string => typeof v === 'string' && !v.includes('\u0000') && isWellFormed(v);

/**
 * Free text that reaches Postgres `text`/`jsonb`, which cannot hold NUL nor a lone surrogate
 * (`\ud83d` without its pair: jsonb rejects the escape): a provider sending one in a finish_reason
 * or error message, or a cut through a surrogate pair, must not turn the event into a poison
 * message, so NUL is dropped and lone surrogates become U+FFFD.
 */
const textSchema = z
  .string()
  .transform((s) => safeText(s.includes('\u0000') ? s.replaceAll('\u0000', '') : s));

export const f = {
  literal<const T extends string | number>(value: T): Field<z.ZodLiteral<T>> {
    return { zod: z.literal(value), plain: (v) => v === value };
  },
  /** A string matching `re` (zod's message: `message`). */
  pattern(re: RegExp, message?: string): Field<z.ZodString> {
    return { zod: z.string().regex(re, message), plain: (v) => typeof v === 'string' && re.test(v) };
  },
  uuid(): Field<z.ZodString> {
    const re = z.regexes.uuid();
    return { zod: z.string().uuid(), plain: (v) => typeof v === 'string' && re.test(v) };
  },
  /** An ISO 8601 UTC time (`Z`, any precision), as `z.string().datetime()`. */
  datetime(): Field<z.ZodString> {
    const re = z.regexes.datetime({ precision: null, offset: false, local: false });
    return { zod: z.string().datetime(), plain: (v) => typeof v === 'string' && re.test(v) };
  },
  /** Free text (NUL dropped, lone surrogates repaired), `min`..`max` characters. */
  text(min = 0, max?: number) {
    let bounded = z.string().min(min);
    if (max !== undefined) bounded = bounded.max(max);
    const zod = min === 0 && max === undefined ? textSchema : textSchema.pipe(bounded);
    return {
      zod,
      plain: (v: unknown) => isText(v) && v.length >= min && (max === undefined || v.length <= max),
    };
  },
  /** A non-negative safe integer. */
  count(): Field<z.ZodNumber> {
    return {
      zod: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
      plain: (v) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0,
    };
  },
  int(): Field<z.ZodNumber> {
    return { zod: z.number().int(), plain: (v) => typeof v === 'number' && Number.isSafeInteger(v) };
  },
  boolean(): Field<z.ZodBoolean> {
    return { zod: z.boolean(), plain: (v) => typeof v === 'boolean' };
  },
  oneOf<const T extends readonly [string, ...string[]]>(
    values: T,
  ): Field<z.ZodEnum<{ [K in T[number]]: K }>> {
    const allowed = values as readonly unknown[];
    return { zod: z.enum(values), plain: (v) => allowed.includes(v) };
  },
  nullable<Z extends z.ZodType>(field: Field<Z>): Field<z.ZodNullable<Z>> {
    return { zod: field.zod.nullable(), plain: (v) => v === null || field.plain(v) };
  },
  optional<Z extends z.ZodType>(field: Field<Z>): Field<z.ZodOptional<Z>> & { optional: true } {
    return { zod: field.zod.optional(), plain: field.plain, optional: true };
  },
  array<Z extends z.ZodType>(item: Field<Z>, max: number): Field<z.ZodArray<Z>> {
    return {
      zod: z.array(item.zod).max(max),
      plain: (v) => {
        if (!Array.isArray(v) || v.length > max) return false;
        for (const x of v) if (!item.plain(x)) return false;
        return true;
      },
    };
  },
  /** An object of exactly these fields (zod strips unknown keys, so `plain` refuses them). */
  object<S extends Record<string, Field>>(shape: S): Field<z.ZodObject<{ [K in keyof S]: S[K]['zod'] }>> {
    const keys = Object.keys(shape);
    const fields = keys.map((k) => shape[k] as Field);
    const known = new Set(keys);
    const zodShape = Object.fromEntries(keys.map((k, i) => [k, fields[i]?.zod])) as {
      [K in keyof S]: S[K]['zod'];
    };
    return {
      zod: z.object(zodShape),
      plain: (v) => {
        if (!isObject(v)) return false;
        for (const k in v) if (!known.has(k)) return false;
        for (let i = 0; i < keys.length; i++) {
          const field = fields[i] as Field;
          const value = v[keys[i] as string];
          // JSON holds no `undefined`: it means absent (allowed only for an optional field).
          if (value === undefined ? !field.optional : !field.plain(value)) return false;
        }
        return true;
      },
    };
  },
};
