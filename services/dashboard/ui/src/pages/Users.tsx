import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import { type FormEvent, useState } from 'react';
import { api, get } from '../api';
import { DataTable } from '../components/DataTable';
import { Badge, CopyButton, ErrorBox, Modal, Page } from '../components/ui';
import { when } from '../format';

interface User {
  id: string;
  email: string;
  display_name: string;
  role: 'owner' | 'viewer';
  invited: boolean;
  created_at: string;
}
const col = createColumnHelper<User>();

export function UsersPage(props: { owner: boolean }) {
  const queryClient = useQueryClient();
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState<'owner' | 'viewer'>('viewer');
  const [link, setLink] = useState<string | null>(null);
  const users = useQuery({
    queryKey: ['users'],
    queryFn: async () => (await get<{ data: User[] }>('/api/users')).data,
  });
  const invite = useMutation({
    mutationFn: () =>
      api<{ data: { sign_in_link: string } }>('POST', '/api/users', { email, display_name: name, role }),
    onSuccess: (r) => {
      setLink(r.data.sign_in_link);
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
    <Page title="Users">
      {props.owner ? (
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
      ) : null}
      <ErrorBox error={users.error} />
      <DataTable
        label="Users"
        data={users.data ?? []}
        columns={[
          col.accessor('display_name', { header: 'Name' }),
          col.accessor('email', { header: 'Email' }),
          col.accessor('role', {
            header: 'Role',
            cell: (c) => <Badge kind={c.getValue()}>{c.getValue()}</Badge>,
          }),
          col.accessor('invited', { header: 'Status', cell: (c) => (c.getValue() ? 'invited' : 'active') }),
          col.accessor('created_at', { header: 'Since', cell: (c) => when(c.getValue()).slice(0, 10) }),
        ]}
      />
      {link ? (
        <Modal title="Sign-in link" onClose={() => setLink(null)}>
          <p>Send this one-time link to the new user; it is shown only now.</p>
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
