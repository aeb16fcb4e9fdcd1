import { MoneyError, toUnits } from '@tollgate/money';
import { z } from 'zod';

/** The file format of a catalog (see README.md for the documented schema). */
const PROVIDER_NAME = /^[a-z0-9][a-z0-9._-]*$/;
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._:-]*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const DEFAULT_SUPPORTED_PARAMETERS = [
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'stop',
  'seed',
  'frequency_penalty',
  'presence_penalty',
  'response_format',
  'tools',
  'tool_choice',
] as const;

/** A per-token USD price: a quoted, non-negative decimal string with at most 10 decimal places. */
const priceString = z.unknown().transform((v, ctx) => {
  if (typeof v !== 'string') {
    ctx.addIssue({
      code: 'custom',
      message: `price must be a quoted decimal string such as "0.0000025", got ${typeof v === 'number' ? `the number ${v}` : (JSON.stringify(v) ?? 'nothing')}`,
    });
    return z.NEVER;
  }
  if (!/^\d+(\.\d+)?$/.test(v.trim())) {
    ctx.addIssue({ code: 'custom', message: `"${v}" is not a non-negative decimal USD amount` });
    return z.NEVER;
  }
  try {
    return { text: v.trim(), units: toUnits(v) };
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: err instanceof MoneyError ? err.message : `bad price "${v}"` });
    return z.NEVER;
  }
});

const positiveInt = z.number().int().positive();

/** Prompt tokens one image counts at each `detail` (issue 22; defaults in bounds.ts). */
const imageTokensSchema = z.strictObject({
  low: positiveInt.optional(),
  high: positiveInt.optional(),
  auto: positiveInt.optional(),
});

/** A reasoning model: the most its hidden reasoning adds to one completion, overall and per effort. */
const reasoningSchema = z.strictObject({
  max_tokens: positiveInt,
  effort: z
    .strictObject({
      minimal: positiveInt.optional(),
      low: positiveInt.optional(),
      medium: positiveInt.optional(),
      high: positiveInt.optional(),
    })
    .optional(),
});

/** Provider wire formats (one adapter each in services/proxy/src/providers/). */
export const WIRE_FORMATS = ['openai', 'anthropic', 'gemini', 'azure', 'bedrock'] as const;
/** What a model produces: chat text, or embedding vectors (served by POST /embeddings only). */
export const OUTPUT_MODALITIES = ['text', 'embeddings'] as const;

/** An embedding model's request limits and vector size. */
const embeddingsSchema = z.strictObject({
  /** Length of the vectors the model returns by default. */
  dimensions: positiveInt,
  /** The caller may ask for shorter vectors (`dimensions`, at most the above). */
  custom_dimensions: z.boolean().default(false),
  /** Most inputs in one request. */
  max_inputs: positiveInt,
  /** Most input tokens in one request (all inputs together). */
  max_tokens_per_request: positiveInt,
});

const providerSchema = z
  .strictObject({
    name: z.string().regex(PROVIDER_NAME, 'provider name must be lowercase letters, digits, ".", "_" or "-"'),
    /** Required, except for azure with `resource` and bedrock with `region` (derived there). */
    base_url: z.string().min(1).optional(),
    api_key_env: z.string().regex(ENV_NAME, 'api_key_env must be an environment variable name').optional(),
    /**
     * More keys of the same provider account(s): requests are spread across every key (api_key_env's,
     * then these), and a key the provider rejects (401/403/429) is skipped for a while.
     * A variable may also hold a comma-separated list.
     */
    api_key_envs: z
      .array(z.string().regex(ENV_NAME, 'api_key_envs entries must be environment variable names'))
      .optional(),
    /** When true, loading fails if the env var named by api_key_env is unset or empty. */
    api_key_required: z.boolean().default(false),
    /** Wire format of the upstream API (README: "Wire formats"). */
    format: z.enum(WIRE_FORMATS).default('openai'),
    /** azure: the resource name (base URL `https://<resource>.openai.azure.com` when base_url is absent). */
    resource: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]*$/, 'resource must be an Azure resource name')
      .optional(),
    /** azure: the `api-version` query parameter of every request (required for azure). */
    api_version: z.string().min(1).optional(),
    /** azure: how the key is sent: `api-key` header (default) or `Authorization: Bearer` (Entra ID token). */
    auth: z.enum(['api-key', 'bearer']).optional(),
    /** bedrock: the AWS region requests are signed for (required for bedrock). */
    region: z
      .string()
      .regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'region must look like "us-east-1"')
      .optional(),
    /** bedrock: a named profile of the AWS shared config/credentials files (else the standard AWS env vars). */
    aws_profile: z.string().min(1).optional(),
    /** The provider simulator (dev/test): the proxy also forwards its `sim` request field. */
    simulator: z.boolean().default(false),
    /**
     * Content policy for media in messages (issue 23). `true` (default): image and other media URLs
     * are forwarded, for providers that fetch them on their own infrastructure. `false`: the provider
     * gets media only as `data:` URIs — a request carrying a media URL skips it (400 when no other
     * candidate is left) — for self-hosted servers (vLLM fetches `image_url` from inside the operator's
     * network: a URL there reaches internal hosts).
     */
    remote_media: z.boolean().default(true),
    /**
     * An OpenAI-format provider that also serves OpenAI's Responses API at `<base_url>/responses`:
     * the proxy's `POST /responses` passes through to it natively (reasoning items round-trip).
     */
    responses: z.boolean().default(false),
  })
  .refine((p) => !p.responses || p.format === 'openai', {
    message: 'responses: only an OpenAI-format provider serves the Responses API',
    path: ['responses'],
  });

const modelSchema = z.strictObject({
  id: z.string().regex(MODEL_ID, 'model id must look like "vendor/name"'),
  name: z.string().min(1),
  description: z.string().default(''),
  context_length: positiveInt,
  max_output_tokens: positiveInt.optional(),
  /** Token bounds of media parts (issue 22): what one image / one document page can count as prompt. */
  image_tokens: imageTokensSchema.optional(),
  document_page_tokens: positiveInt.optional(),
  document_max_pages: positiveInt.optional(),
  reasoning: reasoningSchema.optional(),
  created: z.number().int().nonnegative(),
  providers: z
    .array(z.strictObject({ provider: z.string().min(1), model: z.string().min(1) }))
    .min(1, 'a model needs at least one provider'),
  pricing: z.strictObject({
    prompt: priceString,
    /** Required for text models; embedding models produce no tokens (default "0"). */
    completion: priceString.optional(),
    cache_read: priceString.optional(),
    cache_write: priceString.optional(),
    /** Anthropic's 1-hour cache writes (`cache_control.ttl: "1h"`); default 2 × prompt when cache_write is declared, else cache_write. */
    cache_write_1h: priceString.optional(),
    request: priceString.optional(),
  }),
  supported_parameters: z.array(z.string().min(1)).optional(),
  output_modalities: z.array(z.enum(OUTPUT_MODALITIES)).min(1).default(['text']),
  /** Required when output_modalities is ["embeddings"]. */
  embeddings: embeddingsSchema.optional(),
});

export const catalogFileSchema = z.strictObject({
  providers: z.array(providerSchema).min(1, 'at least one provider is required'),
  models: z.array(modelSchema).min(1, 'at least one model is required'),
});

export type CatalogFile = z.output<typeof catalogFileSchema>;
