// Webhook endpoints (/v1/webhook-endpoints; changes need an owner key): each endpoint with the
// event types it takes; add one (its signing secret shown this once), turn it on or off, send it a
// signed test ping, delete it.
import { useState } from 'preact/hooks';
import { client } from '../api.js';
import { ErrorNote, failure, useLoad } from '../ui.js';

function NewEndpoint({ onCreated }: { onCreated(): void }) {
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const f = new FormData(form);
    const description = String(f.get('description') ?? '').trim();
    const eventTypes = String(f.get('event_types') ?? '')
      .split(/[\s,]+/)
      .filter(Boolean);
    setError(null);
    setSecret(null);
    try {
      const created = await client.webhookEndpoints.create({
        url: String(f.get('url') ?? '').trim(),
        event_types: eventTypes,
        ...(description ? { description } : {}),
      });
      setSecret({ url: created.url, secret: created.secret });
      form.reset();
      onCreated();
    } catch (err) {
      setError(failure(err));
    }
  };
  return (
    <>
      <h2>New endpoint</h2>
      <form class="new-endpoint" onSubmit={(e) => void create(e)}>
        <label class="wide">
          URL
          <input name="url" type="url" required placeholder="https://example.com/hooks" />
        </label>
        <label class="wide">
          Event types (names or patterns such as job.*, separated by commas)
          <input name="event_types" required defaultValue="job.*" />
        </label>
        <label class="wide">
          Description (optional)
          <input name="description" maxLength={500} />
        </label>
        <button type="submit">Add endpoint</button>
      </form>
      <ErrorNote error={error} />
      {secret && (
        <div class="secret" role="status">
          <p>The signing secret of {secret.url}. Copy it now: it is not shown again.</p>
          <code data-secret>{secret.secret}</code>
        </div>
      )}
    </>
  );
}

export function EndpointsPage() {
  const list = useLoad(() => client.webhookEndpoints.list(), []);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const act = async (what: () => Promise<string>) => {
    setError(null);
    setDone(null);
    try {
      setDone(await what());
      list.reload();
    } catch (err) {
      setError(failure(err));
    }
  };
  return (
    <>
      <h1>Webhook endpoints</h1>
      <ErrorNote error={list.error ?? error} />
      <p role="status">{done}</p>
      {list.value && list.value.length === 0 && <p>No endpoints yet.</p>}
      <ul class="deliveries">
        {(list.value ?? []).map((ep) => (
          <li key={ep.id} data-endpoint-id={ep.id}>
            <h2>
              {ep.url} · <span class={`badge ${ep.enabled ? 'completed' : 'failed'}`}>{ep.enabled ? 'enabled' : 'disabled'}</span>
            </h2>
            <p>
              {ep.id} · {ep.event_types.join(', ')} {ep.description ? `· ${ep.description}` : ''}
            </p>
            <div class="actions">
              <button
                type="button"
                onClick={() => void act(async () => `Test ping ${(await client.webhookEndpoints.test(ep.id)).delivery_id} sent to ${ep.url}.`)}
              >
                Send test to {ep.url}
              </button>
              <button
                type="button"
                class="secondary"
                onClick={() =>
                  void act(async () => ((await client.webhookEndpoints.update(ep.id, { enabled: !ep.enabled })).enabled ? 'Enabled.' : 'Disabled.'))
                }
              >
                {ep.enabled ? 'Disable' : 'Enable'} {ep.url}
              </button>
              <button type="button" class="danger" onClick={() => void act(async () => `Deleted ${(await client.webhookEndpoints.delete(ep.id)).id}.`)}>
                Delete {ep.url}
              </button>
            </div>
          </li>
        ))}
      </ul>
      <NewEndpoint onCreated={list.reload} />
    </>
  );
}
