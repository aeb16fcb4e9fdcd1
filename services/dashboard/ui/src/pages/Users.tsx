import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import type { DashboardAnswer, DashboardData } from '@tollgate/contracts';
import { type FormEvent, useState } from 'react';
import { api, get, type Me } from '../api';
import { DataTable } from '../components/DataTable';
import { Badge, CopyButton, ErrorBox, Modal, Page } from '../components/ui';
import { when } from '../time';

type User = DashboardData<'users'>[number];
const col = createColumnHelper<User>();

function InviteForm(props: { onLink: (link: string) => void }) {
  const queryClient = useQueryClient();
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState<'owner' | 'viewer'>('viewer');
  const invite = useMutation({
    mutationFn: () =>
      api<DashboardAnswer<'invite'>>('POST', '/api/users', { email, display_name: name, role }),
    onSuccess: (r) => {
      props.onLink(r.data.sign_in_link);
      setEmail('');
      setName('');
      void queryClient.invalidateQueries({ queryKey: ['users'] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    invite.mutate();
  };
  return (
    <form className="card form-grid" onSubmit={submit} aria-label="Invite a user">
      <h2>Invite a user</h2>
      <label>
        Email
        <input type="email" value={email} onChange={(e) => setEmail(e.target.value)} required />
      </label>
      <label>
        Display name
        <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
      </label>
      <label>
        Role
        <select value={role} onChange={(e) => setRole(e.target.value as 'owner' | 'viewer')}>
          <option value="viewer">viewer (sees everything, changes nothing)</option>
          <option value="owner">owner</option>
        </select>
      </label>
      <ErrorBox error={invite.error} />
      <button type="submit" disabled={invite.isPending}>
        Invite
      </button>
    </form>
  );
}

type Action =
  | { kind: 'role'; role: 'owner' | 'viewer' }
  | { kind: 'remove' }
  | { kind: 'end-sessions' }
  | { kind: 'link' };

const ACTION_TEXT: Record<Action['kind'], (u: User) => { title: string; body: string; button: string }> = {
  role: (u) => ({
    title: u.role === 'owner' ? 'Make viewer' : 'Make owner',
    body:
      u.role === 'owner'
        ? `${u.display_name} will see everything and change nothing.`
        : `${u.display_name} will be able to change keys and users.`,
    button: u.role === 'owner' ? 'Make viewer' : 'Make owner',
  }),
  remove: (u) => ({
    title: u.invited ? 'Cancel invitation' : 'Remove user',
    body: `${u.display_name} (${u.email}) loses access at once; their sessions end.`,
    button: u.invited ? 'Cancel invitation' : 'Remove user',
  }),
  'end-sessions': (u) => ({
    title: 'End sessions',
    body: `Every signed-in session of ${u.display_name} ends now; they can sign in again.`,
    button: 'End sessions',
  }),
  link: (u) =>
    u.invited
      ? { title: 'Re-send invitation', body: 'A new sign-in link replaces the old one.', button: 'New link' }
      : {
          title: 'Reset password',
          body: `${u.display_name}'s password stops working and their sessions end; the link lets them set a new one.`,
          button: 'Reset password',
        },
};

function ConfirmUserAction(props: {
  user: User;
  action: Action;
  onClose: () => void;
  onLink: (l: string) => void;
}) {
  const queryClient = useQueryClient();
  const { user, action } = props;
  const text = ACTION_TEXT[action.kind](user);
  const run = useMutation({
    mutationFn: () => {
      const base = `/api/users/${user.id}`;
      if (action.kind === 'role') return api('PATCH', base, { role: action.role });
      if (action.kind === 'remove') return api('DELETE', base);
      if (action.kind === 'end-sessions') return api('DELETE', `${base}/sessions`);
      return api<DashboardAnswer<'signInLink'>>('POST', `${base}/sign-in-link`);
    },
    onSuccess: (r) => {
      void queryClient.invalidateQueries({ queryKey: ['users'] });
      props.onClose();
      const link = (r as { data?: { sign_in_link?: string } } | undefined)?.data?.sign_in_link;
      if (link) props.onLink(link);
    },
  });
  return (
    <Modal title={text.title} onClose={props.onClose}>
      <p>{text.body}</p>
      <ErrorBox error={run.error} />
      <div className="row">
        <button
          type="button"
          className={action.kind === 'remove' ? 'danger' : undefined}
          onClick={() => run.mutate()}
          disabled={run.isPending}
        >
          {text.button}
        </button>
        <button type="button" className="secondary" onClick={props.onClose}>
          Cancel
        </button>
      </div>
    </Modal>
  );
}

export function UsersPage(props: { owner: boolean; me: Me }) {
  const [link, setLink] = useState<string | null>(null);
  const [pending, setPending] = useState<{ user: User; action: Action } | null>(null);
  const users = useQuery({
    queryKey: ['users'],
    queryFn: async () => (await get<DashboardAnswer<'users'>>('/api/users')).data,
  });
  const act = (user: User, action: Action) => () => setPending({ user, action });
  const columns = [
    col.accessor('display_name', {
      header: 'Name',
      cell: (c) => `${c.getValue()}${c.row.original.id === props.me.user.id ? ' (you)' : ''}`,
    }),
    col.accessor('email', { header: 'Email', meta: { wrap: true } }),
    col.accessor('role', { header: 'Role', cell: (c) => <Badge kind={c.getValue()}>{c.getValue()}</Badge> }),
    col.accessor('invited', { header: 'Status', cell: (c) => (c.getValue() ? 'invited' : 'active') }),
    col.accessor('created_at', { header: 'Since', cell: (c) => when(c.getValue()).slice(0, 10) }),
    ...(props.owner
      ? [
          col.display({
            id: 'actions',
            header: 'Actions',
            cell: (c) => {
              const u = c.row.original;
              return (
                <div className="row actions">
                  <button
                    type="button"
                    className="secondary"
                    onClick={act(u, { kind: 'role', role: u.role === 'owner' ? 'viewer' : 'owner' })}
                  >
                    {u.role === 'owner' ? 'Make viewer' : 'Make owner'}
                  </button>
                  <button type="button" className="secondary" onClick={act(u, { kind: 'link' })}>
                    {u.invited ? 'Re-send invitation' : 'Reset password'}
                  </button>
                  {u.invited ? null : (
                    <button type="button" className="secondary" onClick={act(u, { kind: 'end-sessions' })}>
                      End sessions
                    </button>
                  )}
                  <button type="button" className="danger" onClick={act(u, { kind: 'remove' })}>
                    {u.invited ? 'Cancel invitation' : 'Remove'}
                  </button>
                </div>
              );
            },
          }),
        ]
      : []),
  ];
  return (
    <Page title="Users">
      {props.owner ? <InviteForm onLink={setLink} /> : null}
      <ErrorBox error={users.error} onRetry={() => users.refetch()} />
      <DataTable
        label="Users"
        data={users.data ?? []}
        loading={users.isPending}
        columns={columns}
        rowTestId={(u) => `user-${u.email}`}
      />
      {pending ? <ConfirmUserAction {...pending} onClose={() => setPending(null)} onLink={setLink} /> : null}
      {link ? (
        <Modal title="Sign-in link" onClose={() => setLink(null)} dismissable={false}>
          <p>Send this one-time link to the user; it is shown only now.</p>
          <code className="secret" data-testid="invite-link">
            {link}
          </code>
          <div className="row">
            <CopyButton text={link} />
            <button type="button" onClick={() => setLink(null)}>
              Done
            </button>
          </div>
        </Modal>
      ) : null}
    </Page>
  );
}
