import { useQuery } from '@tanstack/react-query';
import type { DashboardAnswer } from '@tollgate/contracts';
import { get, type Key } from '../../api';
import { when } from '../../time';

/**
 * Access rules of a key (expiry, allowed models, request rate limit, BYOK flag) as form fields. The
 * expiry is UTC (the `datetime-local` value is read as UTC; the label says so).
 */
export interface Access {
  expiresAt: string;
  allowedModels: string[];
  rateLimitRpm: string;
  includeByok: boolean;
  /** Opt-in bodies: the key's prompts and answers are kept (redacted, bounded, for a retention). */
  storeBodies: boolean;
}

export const accessOf = (k?: Key): Access => ({
  expiresAt: k?.expires_at ? k.expires_at.slice(0, 16) : '',
  allowedModels: k?.allowed_models ?? [],
  rateLimitRpm: k?.rate_limit_rpm == null ? '' : String(k.rate_limit_rpm),
  includeByok: k?.include_byok_in_limit ?? false,
  storeBodies: k?.store_bodies ?? false,
});

const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** The API's fields for the rules that differ from `from` (all of them when creating). */
export function accessBody(a: Access, from?: Access): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (a.expiresAt !== from?.expiresAt) body.expires_at = a.expiresAt === '' ? null : `${a.expiresAt}:00Z`;
  if (!from || !sameList(a.allowedModels, from.allowedModels)) body.allowed_models = a.allowedModels;
  if (a.rateLimitRpm !== from?.rateLimitRpm) {
    body.rate_limit_rpm = a.rateLimitRpm === '' ? null : Number(a.rateLimitRpm);
  }
  if (a.includeByok !== from?.includeByok) body.include_byok_in_limit = a.includeByok;
  if (a.storeBodies !== from?.storeBodies) body.store_bodies = a.storeBodies;
  return body;
}

/**
 * Allowed models, picked from the catalog (a model id, or every model of a vendor: `vendor/*`) instead
 * of typed: a typo cannot lock a key out of the model it was meant for. None picked = every model.
 */
function ModelPicker(props: { value: string[]; disabled: boolean; onChange: (v: string[]) => void }) {
  const models = useQuery({
    queryKey: ['models'],
    queryFn: async () => (await get<DashboardAnswer<'models'>>('/api/models')).data,
  });
  const ids = (models.data ?? []).map((m) => m.id);
  const vendors = [...new Set(ids.map((id) => `${id.split('/')[0]}/*`))];
  // Rules saved before (or no longer in the catalog) stay listed, so saving never drops them.
  const options = [...new Set([...vendors, ...ids, ...props.value])];
  const toggle = (id: string, on: boolean) =>
    props.onChange(on ? [...props.value, id] : props.value.filter((x) => x !== id));
  return (
    <fieldset className="picker" disabled={props.disabled}>
      <legend>
        Allowed models{' '}
        <span className="muted">({props.value.length === 0 ? 'all' : props.value.length})</span>
      </legend>
      <div className="picker-list">
        {options.map((id) => (
          <label key={id} className="checkbox">
            <input
              type="checkbox"
              checked={props.value.includes(id)}
              onChange={(e) => toggle(id, e.target.checked)}
            />
            <code>{id}</code>
          </label>
        ))}
      </div>
    </fieldset>
  );
}

export function AccessFields(props: { value: Access; management: boolean; onChange: (a: Access) => void }) {
  const set = (patch: Partial<Access>) => props.onChange({ ...props.value, ...patch });
  return (
    <>
      <label>
        Expires at (UTC)
        <input
          type="datetime-local"
          value={props.value.expiresAt}
          onChange={(e) => set({ expiresAt: e.target.value })}
        />
      </label>
      <label>
        Rate limit (requests/min)
        <input
          type="number"
          min="1"
          step="1"
          value={props.value.rateLimitRpm}
          placeholder="none"
          onChange={(e) => set({ rateLimitRpm: e.target.value })}
        />
      </label>
      <ModelPicker
        value={props.value.allowedModels}
        disabled={props.management}
        onChange={(allowedModels) => set({ allowedModels })}
      />
      <label className="checkbox">
        <input
          type="checkbox"
          checked={props.value.includeByok}
          disabled={props.management}
          onChange={(e) => set({ includeByok: e.target.checked })}
        />
        Include BYOK usage in the spend limit (stored; no effect: Tollgate has no BYOK yet)
      </label>
      <label className="checkbox">
        <input
          type="checkbox"
          checked={props.value.storeBodies}
          disabled={props.management}
          onChange={(e) => set({ storeBodies: e.target.checked })}
        />
        Keep prompts and answers (shown in Generations; redacted, size-bounded, deleted after the retention)
      </label>
    </>
  );
}

/** The rules column: what restricts the key besides its spend limit. */
export function accessSummary(k: Key): string {
  const parts: string[] = [];
  if (k.expires_at) {
    parts.push(
      `${new Date(k.expires_at).getTime() <= Date.now() ? 'expired' : 'expires'} ${when(k.expires_at)}`,
    );
  }
  if (k.allowed_models.length > 0) parts.push(k.allowed_models.join(', '));
  if (k.rate_limit_rpm !== null) parts.push(`${k.rate_limit_rpm} rpm`);
  if (k.store_bodies) parts.push('keeps bodies');
  return parts.length > 0 ? parts.join(' · ') : '—';
}
