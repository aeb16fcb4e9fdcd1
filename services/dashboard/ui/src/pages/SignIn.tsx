import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { DashboardAnswer } from '@tollgate/contracts';
import { type FormEvent, useState } from 'react';
import { useNavigate } from 'react-router';
import { api, get } from '../api';

/** Whether single sign-on and password sign-in are on (GET /api/sso, no session needed). */
const useSignInMethods = () =>
  useQuery({
    queryKey: ['sso'],
    queryFn: async () => (await get<DashboardAnswer<'sso'>>('/api/sso')).data,
    retry: false,
  });

export function SignInPage() {
  const queryClient = useQueryClient();
  const methods = useSignInMethods();
  const passwords = methods.data?.password_sign_in ?? true;
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api('POST', '/api/session', { email, password });
      await queryClient.invalidateQueries({ queryKey: ['me'] });
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="auth">
      <form className="card auth-card" onSubmit={submit} aria-label="Sign in">
        <h1>Tollgate</h1>
        <p className="muted">Sign in to your account's dashboard.</p>
        {methods.data?.enabled ? (
          <a className="button" href="/api/sso/start">
            Sign in with single sign-on
          </a>
        ) : null}
        {passwords ? <PasswordFields {...{ email, setEmail, password, setPassword }} /> : null}
        {error ? (
          <div className="error" role="alert">
            {error}
          </div>
        ) : null}
        {passwords ? (
          <button type="submit" disabled={busy}>
            Sign in
          </button>
        ) : null}
      </form>
    </div>
  );
}

function PasswordFields(p: {
  email: string;
  setEmail: (v: string) => void;
  password: string;
  setPassword: (v: string) => void;
}) {
  const { email, setEmail, password, setPassword } = p;
  return (
    <>
      <label>
        Email
        <input
          type="email"
          autoComplete="username"
          value={email}
          onChange={(e) => setEmail(e.target.value)}
          required
        />
      </label>
      <label>
        Password
        <input
          type="password"
          autoComplete="current-password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          required
        />
      </label>
    </>
  );
}

export function AcceptInvitePage(props: { token: string }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      await api('POST', '/api/invites/accept', { token: props.token, password });
      await queryClient.invalidateQueries({ queryKey: ['me'] });
      void navigate('/overview');
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <div className="auth">
      <form className="card auth-card" onSubmit={submit} aria-label="Choose a password">
        <h1>Welcome to Tollgate</h1>
        <p className="muted">Choose a password (at least 12 characters) to finish signing in.</p>
        <label>
          New password
          <input
            type="password"
            autoComplete="new-password"
            minLength={12}
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            required
          />
        </label>
        {error ? (
          <div className="error" role="alert">
            {error}
          </div>
        ) : null}
        <button type="submit">Set password and sign in</button>
      </form>
    </div>
  );
}
