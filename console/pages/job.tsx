// One job: its record, live progress, outputs, cancel and delete of outputs, and its receipt
// (GET /v1/jobs/{id}/timeline: what was charged and refunded, and when).
import { useState } from 'preact/hooks';
import { client } from '../api.js';
import { ErrorNote, failure, useLoad, when } from '../ui.js';
import { JobProgress } from './progress.js';

export function JobPage({ id }: { id: string }) {
  const [version, setVersion] = useState('');
  const timeline = useLoad(() => client.jobs.timeline(id), [id, version]);
  const [error, setError] = useState<string | null>(null);
  const remove = async () => {
    setError(null);
    try {
      const ref = client.refOf(id);
      const api = { images: client.images, videos: client.videos, 'replace-actors': client.replaceActors, 'talking-actors': client.talkingActors }[ref.kind];
      await api.deleteOutputs(id);
      setVersion(`deleted-${Date.now()}`);
    } catch (err) {
      setError(failure(err));
    }
  };
  const t = timeline.value;
  return (
    <>
      <p>
        <a href="#/jobs">← All jobs</a>
      </p>
      <h1>Job {id}</h1>
      <JobProgress id={id} onChange={(j) => setVersion(`${j.status}-${j.updated_at}`)} />
      <h2>Receipt</h2>
      <ErrorNote error={timeline.error ?? error} />
      {t && (
        <>
          <dl class="receipt" aria-label="Credits">
            <dt>Charged</dt>
            <dd data-charged={t.charges.charged}>{t.charges.charged} credits</dd>
            <dt>Refunded</dt>
            <dd data-refunded={t.charges.refunded}>{t.charges.refunded} credits</dd>
            <dt>Net</dt>
            <dd data-net={t.charges.net}>{t.charges.net} credits</dd>
          </dl>
          <ol class="timeline">
            {t.entries.map((e, i) => (
              <li key={i}>
                <time>{when(e.at)}</time> {e.type.replace(/_/g, ' ')}
                {'credits' in e.details && e.details.credits !== undefined ? ` · ${String(e.details.credits)} credits` : ''}
              </li>
            ))}
          </ol>
          {t.status === 'completed' && (
            <button type="button" class="danger" onClick={() => void remove()}>
              Delete outputs
            </button>
          )}
        </>
      )}
    </>
  );
}
