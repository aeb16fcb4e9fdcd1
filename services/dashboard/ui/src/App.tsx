import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { DashboardAnswer } from '@tollgate/contracts';
import { lazy, Suspense, useEffect, useState } from 'react';
import { HashRouter, Link, Route, Routes, useLocation, useParams, useSearchParams } from 'react-router';
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
const SettingsPage = lazy(() => import('./pages/Settings').then((m) => ({ default: m.SettingsPage })));
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
  { path: 'settings', title: 'Settings' },
] as const;
/** What a team viewer (role `member`) may open: their teams' keys, usage and budgets, and the models. */
const MEMBER_PAGES = new Set(['keys', 'usage', 'teams', 'models']);

/**
 * Hash routing (react-router's HashRouter): `#/keys`, `#/generations/gen-…`, `#/usage?group_by=key`,
 * `#/accept?token=…` (the fragment never reaches a server log, nor the invitation's token with it).
 */
export function App() {
  return (
    <HashRouter>
      <Routes>
        <Route path="/accept/*" element={<AcceptRoute />} />
        <Route path="*" element={<SignedIn />} />
      </Routes>
    </HashRouter>
  );
}

function AcceptRoute() {
  const [params] = useSearchParams();
  return <AcceptInvitePage token={params.get('token') ?? ''} />;
}

function SignedIn() {
  const me = useQuery({
    queryKey: ['me'],
    queryFn: async () => (await get<DashboardAnswer<'me'>>('/api/me')).data,
    retry: false,
  });
  useEffect(() => setCsrfToken(me.data?.csrf_token ?? null), [me.data]);

  if (me.isPending) return <div className="center">{<Loading />}</div>;
  if (me.error) {
    if (me.error instanceof ApiError && me.error.status === 401) return <SignInPage />;
    return (
      <div className="center error" role="alert">
        {me.error.message}
      </div>
    );
  }
  return <Shell me={me.data} />;
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

/** The query string (`#/usage?group_by=key`) as the page's filters: another one starts the page anew. */
function UsageRoute(props: { member: boolean }) {
  const [params] = useSearchParams();
  return <UsagePage key={params.toString()} params={params} member={props.member} />;
}

/** `#/generations/<id>` opens one record over the list (`#/generations?key_id=…` filters it). */
function GenerationsRoute() {
  const [params] = useSearchParams();
  return <GenerationsPage openId={useParams()['*'] || null} params={params} />;
}

function Shell(props: { me: Me }) {
  const { me } = props;
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
  // The page of the path's first segment; the first page (overview, or keys for a team viewer) for
  // `#/` and any unknown path.
  const first = useLocation().pathname.split('/')[1] ?? '';
  const page = pages.find((p) => p.path === first) ?? pages[0]!;
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
              <Link to={`/${p.path}`} aria-current={p.path === page.path ? 'page' : undefined}>
                {p.title}
              </Link>
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
          <Routes>
            <Route path="/keys/*" element={<KeysPage owner={owner} />} />
            <Route path="/usage/*" element={<UsageRoute member={member} />} />
            <Route path="/models/*" element={<ModelsPage />} />
            <Route path="/teams/*" element={<TeamsPage owner={owner} member={member} />} />
            {/* A team viewer has only their teams' pages (the server refuses the rest anyway). */}
            {!member && (
              <>
                <Route path="/generations/*" element={<GenerationsRoute />} />
                <Route path="/credits/*" element={<CreditsPage />} />
                <Route path="/users/*" element={<UsersPage owner={owner} me={me} />} />
                <Route path="/alerts/*" element={<AlertsPage owner={owner} />} />
                <Route path="/audit/*" element={<AuditPage />} />
                <Route path="/settings/*" element={<SettingsPage me={me} owner={owner} />} />
              </>
            )}
            <Route path="*" element={member ? <KeysPage owner={false} /> : <OverviewPage />} />
          </Routes>
        </Suspense>
      </main>
    </div>
  );
}
