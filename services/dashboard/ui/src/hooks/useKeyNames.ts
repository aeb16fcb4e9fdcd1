import { useQuery } from '@tanstack/react-query';
import type { DashboardAnswer } from '@tollgate/contracts';
import { useMemo } from 'react';
import { get } from '../api';

/** While the key list cannot be read, it is asked for again this often (ms). */
const RETRY_EVERY_MS = 5_000;

/**
 * Every key of the account (revoked ones too: old records name them), for the pages that show a
 * key's name for its id (Usage, its errors section, Generations). One query shared by all of them.
 * A read that fails after the client's retries is not the end: it is asked for again every 5 s until
 * it answers, and `error` says so meanwhile (the pages show it with the ids' prefixes), where before
 * one failed read under load left the ids' prefixes on screen until a reload.
 */
export function useKeyNames(enabled = true) {
  const keys = useQuery({
    queryKey: ['keys', true],
    queryFn: async () => (await get<DashboardAnswer<'keys'>>('/api/keys?include_revoked=true')).data,
    enabled,
    refetchInterval: (q) => (q.state.status === 'error' ? RETRY_EVERY_MS : false),
  });
  const names = useMemo(() => new Map((keys.data ?? []).map((k) => [k.hash, k.name])), [keys.data]);
  return { keys, names, error: keys.error };
}
