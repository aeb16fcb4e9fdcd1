import {
  AUDIT_SOURCES,
  type AuditEntry,
  type AuditSource,
  type AuditTimelineEntry,
} from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';

type Page = { data: AuditEntry[]; next_before: string | null };

/** Reads one page of one log, newest first, with the filters given (`before` an entry id of that log). */
export type AuditPageReader = (source: AuditSource, filters: Record<string, string>) => Promise<Page>;

/**
 * The merged timeline's cursor: where each source stands, `keys:120,billing:end,dashboard:7` (an
 * entry id: continue below it; `end`: nothing left; absent: from the newest).
 */
type Cursor = Partial<Record<AuditSource, string>>;

function parseCursor(value: string | undefined): Cursor {
  const out: Cursor = {};
  if (value === undefined) return out;
  for (const part of value.split(',')) {
    const [source, at] = part.split(':') as [AuditSource, string | undefined];
    if (!AUDIT_SOURCES.includes(source) || !at || !/^(end|[1-9][0-9]{0,17})$/.test(at))
      throw badRequest('before: the next_before of a previous page', { field: 'before' });
    out[source] = at;
  }
  return out;
}

const newer = (a: AuditEntry, b: AuditEntry) => a.at > b.at || (a.at === b.at && Number(a.id) > Number(b.id));

/**
 * One page of the merged timeline, newest first: a page of `limit` from each source not yet at its
 * end, merged by time keeping each source's own order; the cursor records where each source stands.
 * `filters` are the caller's query (the `auditTimelineQuery` of @tollgate/contracts): every one but
 * `before` and `limit` is handed to each source as given.
 */
export async function timelinePage(
  read: AuditPageReader,
  filters: Record<string, string>,
): Promise<{ data: AuditTimelineEntry[]; next_before: string | null }> {
  const { before, ...rest } = filters;
  const cursor = parseCursor(before);
  const limit = rest.limit === undefined ? 100 : Number(rest.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500)
    throw badRequest('limit: 1 to 500', { field: 'limit' });
  const live = AUDIT_SOURCES.filter((s) => cursor[s] !== 'end');
  const pages = await Promise.all(
    live.map(async (source) => {
      const at = cursor[source];
      const page = await read(source, { ...rest, limit: String(limit), ...(at ? { before: at } : {}) });
      return { source, page, taken: 0 };
    }),
  );
  const data: AuditTimelineEntry[] = [];
  while (data.length < limit) {
    let best: (typeof pages)[number] | undefined;
    for (const p of pages) {
      const head = p.page.data[p.taken];
      if (head && (!best || newer(head, best.page.data[best.taken] as AuditEntry))) best = p;
    }
    if (!best) break;
    data.push({ ...(best.page.data[best.taken] as AuditEntry), source: best.source });
    best.taken++;
  }
  const next: Cursor = { ...cursor };
  for (const p of pages) {
    const exhausted = p.taken === p.page.data.length && p.page.next_before === null;
    if (exhausted) next[p.source] = 'end';
    else if (p.taken > 0) next[p.source] = (p.page.data[p.taken - 1] as AuditEntry).id;
  }
  const done = AUDIT_SOURCES.every((s) => next[s] === 'end');
  return {
    data,
    next_before: done
      ? null
      : AUDIT_SOURCES.filter((s) => next[s] !== undefined)
          .map((s) => `${s}:${next[s]}`)
          .join(',') || null,
  };
}
