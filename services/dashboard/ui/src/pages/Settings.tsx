import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { DashboardAnswer } from '@tollgate/contracts';
import { api, type Me } from '../api';
import { ErrorBox, Page } from '../components/ui';

/**
 * The account's settings. Opt-in bodies for the whole account (issue 28): when on, the prompt and the
 * answer of every key's requests are kept, whatever each key's own switch says. Owners change it
 * (audited as `account.update`); viewers see it.
 */
export function SettingsPage(props: { me: Me; owner: boolean }) {
  const { account } = props.me;
  const queryClient = useQueryClient();
  const save = useMutation({
    mutationFn: (storeBodies: boolean) =>
      api<DashboardAnswer<'account'>>('PATCH', '/api/account', { store_bodies: storeBodies }),
    onSuccess: (answer) => {
      queryClient.setQueryData<Me>(['me'], (me) => (me ? { ...me, account: answer.data } : me));
    },
  });
  return (
    <Page title="Settings">
      <section className="card settings" aria-labelledby="settings-account">
        <h2 id="settings-account">Account</h2>
        <dl className="facts">
          <dt>Name</dt>
          <dd>{account.name}</dd>
          <dt>Slug</dt>
          <dd>
            <code>{account.slug}</code>
          </dd>
        </dl>
      </section>
      <section className="card settings" aria-labelledby="settings-bodies">
        <h2 id="settings-bodies">Prompts and answers</h2>
        <p className="muted">
          Off by default. When on, the proxy keeps the prompt and the answer of every request of every key of
          this account (not only of the keys with “Keep prompts and answers”): redacted by the configured
          patterns, cut to the configured size and deleted after the retention. They are shown in a
          generation’s detail.
        </p>
        <label className="checkbox">
          <input
            type="checkbox"
            checked={account.store_bodies}
            disabled={!props.owner || save.isPending}
            onChange={(e) => save.mutate(e.target.checked)}
          />
          Keep prompts and answers of every key
        </label>
        {props.owner ? null : <p className="muted">Only an owner of the account can change this.</p>}
        <ErrorBox error={save.error} />
      </section>
    </Page>
  );
}
