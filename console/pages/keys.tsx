// API keys (GET/POST/DELETE /v1/api-keys, an owner key with the admin scope): every key with its
// rules, a new key whose secret is shown this once (the API never shows it again), and revoke.
// Revoking the key this session was made from ends the session on its next request.
//
// Minting and revoking keys needs the acting key's secret itself (Postgres checks it: 0105), which
// a session does not hold (the browser never keeps the key). So those two acts ask for an owner key
// again, like a sudo prompt: it is sent as that one request's Authorization header through a client
// made for the request, and the field is cleared after it; the list is read with the session.
import { useRef, useState } from 'preact/hooks';
import { MediaGenClient, type ApiKeyCreate } from '@mediagen/client';
import { client } from '../api.js';
import { ErrorNote, failure, useLoad } from '../ui.js';

/** A client with the key typed into the confirm field, for one request; the field is emptied at once. */
function confirmedClient(field: HTMLInputElement | null): MediaGenClient {
  const apiKey = field?.value.trim() ?? '';
  if (field) field.value = '';
  if (!apiKey) throw new Error('Type an owner API key into “Confirm with an API key” first: changing keys needs the key itself.');
  return new MediaGenClient({ apiKey, baseUrl: location.origin, maxRetries: 0, onWarning: () => undefined });
}

const scopes = ['read', 'generate', 'uploads', 'admin'] as const;

function NewKey({ onCreated, confirm }: { onCreated(): void; confirm(): MediaGenClient }) {
  const [secret, setSecret] = useState<{ name: string; key: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const f = new FormData(form);
    const body: ApiKeyCreate = { name: String(f.get('name') ?? '').trim(), scopes: f.getAll('scopes').map(String) as ApiKeyCreate['scopes'] };
    setError(null);
    setSecret(null);
    try {
      const created = (await confirm().apiKeys.create(body)).data;
      setSecret({ name: created.name, key: created.key });
      form.reset();
      onCreated();
    } catch (err) {
      setError(failure(err));
    }
  };
  return (
    <>
      <h2>New key</h2>
      <form class="new-key" onSubmit={(e) => void create(e)}>
        <label>
          Name
          <input name="name" required maxLength={100} />
        </label>
        <fieldset>
          <legend>Scopes</legend>
          {scopes.map((s) => (
            <label key={s} class="check">
              <input type="checkbox" name="scopes" value={s} defaultChecked={s !== 'admin'} /> {s}
            </label>
          ))}
        </fieldset>
        <button type="submit">Create key</button>
      </form>
      <ErrorNote error={error} />
      {secret && (
        <div class="secret" role="status">
          <p>
            The key <strong>{secret.name}</strong>. Copy it now: it is not shown again.
          </p>
          <code data-secret>{secret.key}</code>
        </div>
      )}
    </>
  );
}

export function KeysPage() {
  const keys = useLoad(() => client.apiKeys.list(), []);
  const [error, setError] = useState<string | null>(null);
  const confirmField = useRef<HTMLInputElement>(null);
  const confirm = () => confirmedClient(confirmField.current);
  const revoke = async (id: string) => {
    setError(null);
    try {
      await confirm().apiKeys.revoke(id);
      keys.reload();
    } catch (err) {
      setError(failure(err));
    }
  };
  return (
    <>
      <h1>API keys</h1>
      <label class="confirm-key">
        Confirm with an API key (an owner key: creating and revoking keys needs the key itself; it is sent with that one request and not kept)
        <input ref={confirmField} id="confirm_key" type="password" autocomplete="off" placeholder="mg_live_…" />
      </label>
      <ErrorNote error={keys.error ?? error} />
      <div class="table-wrap" tabIndex={0} role="region" aria-label="API keys">
        <table>
          <caption class="sr-only">The workspace's API keys</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Key id</th>
              <th scope="col">Scopes</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {(keys.value?.data ?? []).map((k) => (
              <tr key={k.id} data-key-id={k.id}>
                <td>{k.name}</td>
                <td>{k.id}</td>
                <td>{k.scopes.join(', ')}</td>
                <td>{k.last_used_at ?? '—'}</td>
                <td>
                  {k.revoked_at ? (
                    <span class="badge failed">revoked</span>
                  ) : (
                    <button type="button" class="danger" onClick={() => void revoke(k.id)}>
                      Revoke {k.name}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <NewKey onCreated={keys.reload} confirm={confirm} />
    </>
  );
}
