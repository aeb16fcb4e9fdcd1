import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { ApiError, api, get, type Me, setCsrfToken } from './api';
import { CreditsPage } from './pages/Credits';
import { GenerationsPage } from './pages/Generations';
import { KeysPage } from './pages/Keys';
import { ModelsPage } from './pages/Models';
import { OverviewPage } from './pages/Overview';
import { AcceptInvitePage, SignInPage } from './pages/SignIn';
import { UsagePage } from './pages/Usage';
import { UsersPage } from './pages/Users';

const PAGES = [
  { path: 'overview', title: 'Overview' },
  { path: 'keys', title: 'Keys' },
  { path: 'usage', title: 'Usage' },
  { path: 'generations', title: 'Generations' },
  { path: 'credits', title: 'Credits' },
  { path: 'models', title: 'Models' },
  { path: 'users', title: 'Users' },
] as const;

function readHash(): { path: string; params: URLSearchParams } {
  const raw = window.location.hash.replace(/^#\/?/, '');
  const [path = '', query = ''] = raw.split('?');
  return { path, params: new URLSearchParams(query) };
}

/** Hash routing: `#/keys`, `#/accept?token=…` (the token never reaches a server log). */
function useHashRoute(): { path: string; params: URLSearchParams } {
  const read = readHash;
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(readHash());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function App() {
  const route = useHashRoute();
  const me = useQuery({
    queryKey: ['me'],
    queryFn: async () => (await get<{ data: Me }>('/api/me')).data,
    retry: false,
  });
  useEffect(() => setCsrfToken(me.data?.csrf_token ?? null), [me.data]);

  if (route.path === 'accept') return <AcceptInvitePage token={route.params.get('token') ?? ''} />;
  if (me.isPending) return <div className="center">Loading…</div>;
  if (me.error) {
    if (me.error instanceof ApiError && me.error.status === 401) return <SignInPage />;
    return (
      <div className="center error" role="alert">
        {me.error.message}
      </div>
    );
  }
  return <Shell me={me.data} path={route.path || 'overview'} params={route.params} />;
}

function Shell(props: { me: Me; path: string; params: URLSearchParams }) {
  const { me } = props;
  const queryClient = useQueryClient();
  const signOut = useMutation({
    mutationFn: () => api('DELETE', '/api/session'),
    // A fresh start: no cached data of the account survives in this tab.
    onSettled: () => {
      setCsrfToken(null);
      queryClient.clear();
      window.location.hash = '';
      window.location.reload();
    },
  });
  const owner = me.user.role === 'owner';
  const page = PAGES.find((p) => p.path === props.path) ?? PAGES[0];
  return (
    <div className="shell">
      <nav className="nav" aria-label="Main">
        <div className="brand">
          Tollgate
          <span className="account" data-testid="account-name">
            {me.account.name}
          </span>
        </div>
        <ul>
          {PAGES.map((p) => (
            <li key={p.path}>
              <a href={`#/${p.path}`} aria-current={p.path === page.path ? 'page' : undefined}>
                {p.title}
              </a>
            </li>
          ))}
        </ul>
        <div className="who">
          <span title={me.user.email}>{me.user.display_name}</span>
          <span className={`badge badge-${me.user.role}`} data-testid="role">
            {me.user.role}
          </span>
          <button type="button" className="secondary" onClick={() => signOut.mutate()}>
            Sign out
          </button>
        </div>
      </nav>
      <main className="main">
        {page.path === 'overview' && <OverviewPage />}
        {page.path === 'keys' && <KeysPage owner={owner} />}
        {page.path === 'usage' && <UsagePage />}
        {page.path === 'generations' && <GenerationsPage />}
        {page.path === 'credits' && <CreditsPage />}
        {page.path === 'models' && <ModelsPage />}
        {page.path === 'users' && <UsersPage owner={owner} />}
      </main>
    </div>
  );
}
