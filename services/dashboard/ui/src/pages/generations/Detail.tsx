import { useQuery } from '@tanstack/react-query';
import type { DashboardAnswer } from '@tollgate/contracts';
import { get } from '../../api';
import { CopyButton, ErrorBox, Loading, Modal } from '../../components/ui';
import { int, ms, overheadMs, usd } from '../../format';
import { when } from '../../time';
import { GenerationBodies } from './Bodies';

/** One record in full; its URL is `#/generations/<id>` (shareable with the account's other users). */
export function GenerationDetail(props: {
  id: string;
  keyName: (id: string) => string;
  onClose: () => void;
}) {
  const g = useQuery({
    queryKey: ['generation', props.id],
    queryFn: async () =>
      (await get<DashboardAnswer<'generation'>>(`/api/generations/${encodeURIComponent(props.id)}`)).data,
  });
  const d = g.data;
  const rows: Array<[string, string]> = d
    ? [
        ['id', d.id],
        ['time', when(d.created_at)],
        ['finished', when(d.finished_at)],
        ['model', d.model],
        ['provider', `${d.provider_name} (${d.upstream_model})`],
        ['upstream id', d.upstream_id ?? '—'],
        ['app (X-Title)', d.app ?? '—'],
        ['key', props.keyName(d.key_id)],
        ['prompt tokens', int(d.tokens_prompt)],
        ['completion tokens', int(d.tokens_completion)],
        ['cached tokens', int(d.tokens_cached)],
        ['cache write tokens', int(d.tokens_cache_write)],
        ['reasoning tokens', int(d.tokens_reasoning)],
        ['cost', `${usd(d.cost)} (${d.cost} USD)`],
        ['usage source', d.usage_source],
        ['streamed', String(d.streamed)],
        ['cancelled', String(d.cancelled)],
        ['finish reason', d.finish_reason ?? '—'],
        ['latency', ms(d.latency_ms)],
        ['generation time', ms(d.generation_time_ms)],
        ['gateway overhead', overheadMs(d.gateway_overhead_ms)],
        ['tokens per second', d.tokens_per_second === null ? '—' : d.tokens_per_second.toFixed(1)],
        ['BYOK', String(d.is_byok)],
        ['error', d.error ? `${d.error.code} ${d.error.message}` : '—'],
      ]
    : [];
  const link = `${window.location.origin}${window.location.pathname}#/generations/${encodeURIComponent(props.id)}`;
  return (
    <Modal title="Generation" onClose={props.onClose}>
      <ErrorBox error={g.error} />
      {g.isPending ? <Loading /> : null}
      <dl className="detail" data-testid="generation-detail">
        {rows.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
      {d ? <GenerationBodies bodies={d.bodies} /> : null}
      <div className="row">
        <button type="button" onClick={props.onClose}>
          Close
        </button>
        <CopyButton text={link} label="Copy link" />
      </div>
    </Modal>
  );
}
