// Pipelines: GET /v1/pipelines with its status filter, newest first, by pages; one pipeline's
// record with its steps (each step's job, progress, charge and refund), followed live by its event
// stream, and cancel (POST /v1/pipelines/{id}/cancel).
import { useEffect, useState } from 'preact/hooks';
import type { Pipeline, PipelinesQuery } from '@mediagen/client';
import { client } from '../api.js';
import { ErrorNote, StatusBadge, failure, useLoad, when } from '../ui.js';

export function PipelinesPage() {
  const [status, setStatus] = useState('');
  const [cursors, setCursors] = useState<string[]>([]);
  const page = useLoad(
    () =>
      client.pipelines.list({
        limit: 25,
        ...(status ? { status: status as NonNullable<PipelinesQuery>['status'] } : {}),
        ...(cursors.length ? { cursor: cursors.at(-1)! } : {}),
      }),
    [status, cursors.length],
  );
  return (
    <>
      <h1>Pipelines</h1>
      <label>
        Status
        <select
          value={status}
          onChange={(e) => {
            setCursors([]);
            setStatus((e.currentTarget as HTMLSelectElement).value);
          }}
        >
          <option value="">any</option>
          {['pending', 'running', 'completed', 'failed'].map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>
      </label>
      <ErrorNote error={page.error} />
      <div class="table-wrap" tabIndex={0} role="region" aria-label="Pipelines">
        <table>
          <caption class="sr-only">Pipelines, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Pipeline</th>
              <th scope="col">Status</th>
              <th scope="col">Steps</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {(page.value?.data ?? []).map((p) => (
              <tr key={p.id}>
                <td>
                  <a href={`#/pipelines/${p.id}`}>{p.id}</a>
                </td>
                <td>
                  <StatusBadge status={p.status} />
                </td>
                <td>{p.steps.map((s) => s.model).join(' → ')}</td>
                <td>{when(p.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {page.value?.next_cursor && (
        <button type="button" onClick={() => setCursors([...cursors, page.value!.next_cursor!])}>
          Older pipelines
        </button>
      )}
    </>
  );
}

const ended = (s: string) => s === 'completed' || s === 'failed';

/** The pipeline's record, then its events until it ends (a dropped stream reads the record again). */
function useLivePipeline(id: string): { pipeline: Pipeline | null; error: string | null; set(p: Pipeline): void } {
  const [pipeline, set] = useState<Pipeline | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const abort = new AbortController();
    void (async () => {
      for (let attempt = 0; attempt < 20 && !abort.signal.aborted; attempt++) {
        try {
          const record = (await client.pipelines.get(id, { signal: abort.signal })).data;
          set(record);
          if (ended(record.status)) return;
          for await (const ev of client.pipelines.events(id, { signal: abort.signal })) {
            set(ev.pipeline);
            if (ended(ev.pipeline.status)) return;
          }
        } catch (err) {
          if (abort.signal.aborted) return;
          setError(failure(err));
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    })();
    return () => abort.abort();
  }, [id]);
  return { pipeline, error, set };
}

export function PipelinePage({ id }: { id: string }) {
  const { pipeline: p, error, set } = useLivePipeline(id);
  const [cancelError, setCancelError] = useState<string | null>(null);
  const cancel = async () => {
    setCancelError(null);
    try {
      set((await client.pipelines.cancel(id)).data);
    } catch (err) {
      setCancelError(failure(err));
    }
  };
  return (
    <>
      <p>
        <a href="#/pipelines">← All pipelines</a>
      </p>
      <h1>Pipeline {id}</h1>
      <ErrorNote error={error ?? cancelError} />
      {!p ? (
        <p aria-busy="true">Loading {id}…</p>
      ) : (
        <>
          <p role="status" data-status={p.status}>
            <StatusBadge status={p.status} /> price {p.price} credits · charged {p.charged} credits
          </p>
          {p.error && <ErrorNote error={`${p.error.message} (${p.error.code})`} />}
          {!ended(p.status) && (
            <button type="button" class="danger" onClick={() => void cancel()}>
              Cancel pipeline
            </button>
          )}
          <h2>Steps</h2>
          <ol class="steps">
            {p.steps.map((s) => (
              <li key={s.id} data-step={s.id} data-step-status={s.status}>
                <strong>{s.id}</strong> · {s.model} · <StatusBadge status={s.status} />
                {s.progress?.percent != null ? ` ${s.progress.percent}%` : ''} · charged {s.charged}, refunded {s.refunded} credits
                {s.job_id && (
                  <>
                    {' '}
                    · <a href={`#/jobs/${s.job_id}`}>{s.job_id}</a>
                  </>
                )}
                {s.error && <ErrorNote error={`${s.error.message} (${s.error.code})`} />}
              </li>
            ))}
          </ol>
        </>
      )}
    </>
  );
}
