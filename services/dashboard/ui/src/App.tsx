import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { DashboardAnswer } from '@tollgate/contracts';
import { lazy, Suspense, useEffect, useState } from 'react';
import { ApiError, api, get, type Me, setCsrfToken } from './api';
import { Loading } from './components/ui';
import { AcceptInvitePage, SignInPage } from './pages/SignIn';
import { BROWSER_ZONE, displayZone, setDisplayZone } from './time';

// One chunk per page (the charts library only loads with the pages that draw charts).
const OverviewPage = lazy(() => import('./pages/Overview').then((m) => ({ default: m.OverviewPage })));
const KeysPage = lazy(() => import('./pages/Keys').then((m) => ({ default: m.KeysPage })));
const UsagePage = lazy(() => import('./pages/Usage').then((m) => ({ default: m.UsagePage })));
const GenerationsPage = lazy(() =>
  import('./pages/Generations').then((m) => ({ default: m.GenerationsPage })),
);
const CreditsPage = lazy(() => import('./pages/Credits').then((m) => ({ default: m.CreditsPage })));
const ModelsPage = lazy(() => import('./pages/Models').then((m) => ({ default: m.ModelsPage })));
const UsersPage = lazy(() => import('./pages/Users').then((m) => ({ default: m.UsersPage })));
const AuditPage = lazy(() => import('./pages/Audit').then((m) => ({ default: m.AuditPage })));
const AlertsPage = lazy(() => import('./pages/Alerts').then((m) => ({ default: m.AlertsPage })));
const TeamsPage = lazy(() => import('./pages/Teams').then((m) => ({ default: m.TeamsPage })));

const PAGES = [
  { path: 'overview', title: 'Overview' },
  { path: 'keys', title: 'Keys' },
  { path: 'usage', title: 'Usage' },
  { path: 'generations', title: 'Generations' },
  { path: 'credits', title: 'Credits' },
  { path: 'models', title: 'Models' },
  { path: 'teams', title: 'Teams' },
  { path: 'users', title: 'Users' },
  { path: 'alerts', title: 'Alerts' },
  { path: 'audit', title: 'Audit log' },
] as const;
/** What a team viewer (role `member`) may open: their teams' keys, usage and budgets, and the models. */
const MEMBER_PAGES = new Set(['keys', 'usage', 'teams', 'models']);

interface Route {
  path: string;
  /** `#/generations/<id>`: the part after the page. */
  sub: string;
  params: URLSearchParams;
}

function readHash(): Route {
  const raw = window.location.hash.replace(/^#\/?/, '');
  const [path = '', query = ''] = raw.split('?');
  const [page = '', ...rest] = path.split('/');
  return { path: page, sub: decodeURIComponent(rest.join('/')), params: new URLSearchParams(query) };
}

/** Hash routing: `#/keys`, `#/generations/gen-…`, `#/accept?token=…` (the token never reaches a server log). */
function useHashRoute(): Route {
  const [route, setRoute] = useState(readHash);
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
    queryFn: async () => (await get<DashboardAnswer<'me'>>('/api/me')).data,
    retry: false,
  });
  useEffect(() => setCsrfToken(me.data?.csrf_token ?? null), [me.data]);

  if (route.path === 'accept') return <AcceptInvitePage token={route.params.get('token') ?? ''} />;
  if (me.isPending) return <div className="center">{<Loading />}</div>;
  if (me.error) {
    if (me.error instanceof ApiError && me.error.status === 401) return <SignInPage />;
    return (
      <div className="center error" role="alert">
        {me.error.message}
      </div>
    );
  }
  return <Shell me={me.data} route={route} />;
}

/** Display time zone: the viewer's or UTC (periods stay UTC either way). */
function ZonePicker(props: { onChange: () => void }) {
  const [zone, setZone] = useState(displayZone() === 'UTC' ? 'UTC' : 'local');
  if (BROWSER_ZONE === 'UTC') return null;
  return (
    <label className="zone">
      Times in
      <select
        value={zone}
        onChange={(e) => {
          const z = e.target.value as 'UTC' | 'local';
          setDisplayZone(z);
          setZone(z);
          props.onChange();
        }}
      >
        <option value="local">{BROWSER_ZONE}</option>
        <option value="UTC">UTC</option>
      </select>
    </label>
  );
}

function Shell(props: { me: Me; route: Route }) {
  const { me, route } = props;
  const queryClient = useQueryClient();
  const [zoneVersion, setZoneVersion] = useState(0);
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
  const member = me.user.role === 'member';
  const pages = member ? PAGES.filter((p) => MEMBER_PAGES.has(p.path)) : PAGES;
  const page = pages.find((p) => p.path === route.path) ?? pages[0]!;
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
          {pages.map((p) => (
            <li key={p.path}>
              <a href={`#/${p.path}`} aria-current={p.path === page.path ? 'page' : undefined}>
                {p.title}
              </a>
            </li>
          ))}
        </ul>
        <div className="who">
          <ZonePicker onChange={() => setZoneVersion((v) => v + 1)} />
          <span title={me.user.email}>{me.user.display_name}</span>
          <span className={`badge badge-${me.user.role}`} data-testid="role">
            {me.user.role}
          </span>
          <button type="button" className="secondary" onClick={() => signOut.mutate()}>
            Sign out
          </button>
        </div>
      </nav>
      <main className="main" key={zoneVersion}>
        <Suspense fallback={<Loading />}>
          {page.path === 'overview' && <OverviewPage />}
          {page.path === 'keys' && <KeysPage owner={owner} />}
          {page.path === 'usage' && <UsagePage params={route.params} member={member} />}
          {page.path === 'generations' && (
            <GenerationsPage openId={route.sub || null} params={route.params} />
          )}
          {page.path === 'credits' && <CreditsPage />}
          {page.path === 'models' && <ModelsPage />}
          {page.path === 'teams' && <TeamsPage owner={owner} member={member} />}
          {page.path === 'users' && <UsersPage owner={owner} me={me} />}
          {page.path === 'alerts' && <AlertsPage owner={owner} />}
          {page.path === 'audit' && <AuditPage />}
        </Suspense>
      </main>
    </div>
  );
}
