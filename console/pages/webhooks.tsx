// Webhook deliveries (GET /v1/webhook-deliveries): each event with its attempts, and redeliver
// (POST …/{id}/redeliver) for a finished one.
import { useState } from 'preact/hooks';
import { client } from '../api.js';
import { ErrorNote, failure, useLoad } from '../ui.js';

export function WebhooksPage() {
  const list = useLoad(() => client.webhookDeliveries.list({ limit: 50 }), []);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const redeliver = async (id: string) => {
    setError(null);
    setDone(null);
    try {
      await client.webhookDeliveries.redeliver(id);
      setDone(`Redelivery of ${id} queued.`);
      list.reload();
    } catch (err) {
      setError(failure(err));
    }
  };
  return (
    <>
      <h1>Webhook deliveries</h1>
      <ErrorNote error={list.error ?? error} />
      <p role="status">{done}</p>
      {list.value && list.value.data.length === 0 && <p>No webhook events yet.</p>}
      <ul class="deliveries">
        {(list.value?.data ?? []).map((d) => (
          <li key={d.id}>
            <h2>
              {d.event} · <span class={`badge ${d.status}`}>{d.status}</span>
            </h2>
            <p>
              {d.id} → {d.url} {d.job_id ? `· job ${d.job_id}` : ''}
            </p>
            <ol>
              {d.attempts.map((a) => (
                <li key={a.number}>
                  Attempt {a.number} at {a.started_at}: {a.status_code ?? 'no answer'} {a.error_class ?? ''}
                </li>
              ))}
            </ol>
            {d.status !== 'pending' && (
              <button type="button" onClick={() => void redeliver(d.id)}>
                Redeliver {d.id}
              </button>
            )}
          </li>
        ))}
      </ul>
    </>
  );
}
