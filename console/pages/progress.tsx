// A job followed live: its status and percent from the event stream (GET …/events through the
// client), the outputs once completed (image, or a video player) with download, and cancel.
import { useEffect, useState } from 'preact/hooks';
import type { AnyJob, JobKind, JobRef } from '@mediagen/client';
import { client } from '../api.js';
import { ErrorNote, StatusBadge, failure } from '../ui.js';

const terminal = (s: string) => s === 'completed' || s === 'failed';

function kindApi(kind: JobKind) {
  return { images: client.images, videos: client.videos, 'replace-actors': client.replaceActors, 'talking-actors': client.talkingActors }[kind];
}

/** Follows the job's events until it ends; reconnects from the last event id, reading the record again first. */
function useLiveJob(ref: JobRef): { job: AnyJob | null; error: string | null; setJob(j: AnyJob): void } {
  const [job, setJob] = useState<AnyJob | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const abort = new AbortController();
    void (async () => {
      let lastEventId: string | undefined;
      for (let attempt = 0; attempt < 20 && !abort.signal.aborted; attempt++) {
        try {
          const record = (await client.getJob(ref, { signal: abort.signal })) as AnyJob;
          setJob(record);
          if (terminal(record.status)) return;
          for await (const ev of client.jobEvents(ref, { signal: abort.signal, ...(lastEventId ? { lastEventId } : {}) })) {
            lastEventId = ev.id ?? lastEventId;
            setJob(ev.job as AnyJob);
            if (terminal((ev.job as AnyJob).status)) return;
          }
        } catch (err) {
          if (abort.signal.aborted) return;
          setError(failure(err));
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    })();
    return () => abort.abort();
  }, [ref.id]);
  return { job, error, setJob };
}

function Outputs({ refOf, job }: { refOf: JobRef; job: AnyJob }) {
  const [urls, setUrls] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    client
      .jobUrl(refOf)
      .then((u) => setUrls(u.urls ?? [u.url]))
      .catch((err: unknown) => setError(failure(err)));
  }, [job.id]);
  return (
    <section aria-label="Outputs" class="outputs">
      <ErrorNote error={error} />
      {urls.map((url, i) => (
        <figure key={url}>
          {refOf.kind === 'images' ? (
            <img src={url} alt={`Output ${i + 1} of ${job.id}`} class="output" />
          ) : (
            <video src={url} controls class="output" aria-label={`Output ${i + 1} of ${job.id}`} />
          )}
          <figcaption>
            <a href={url} download>
              Download output {i + 1}
            </a>
          </figcaption>
        </figure>
      ))}
    </section>
  );
}

export function JobProgress({ id, onChange }: { id: string; onChange?(job: AnyJob): void }) {
  const ref = client.refOf(id);
  const { job, error, setJob } = useLiveJob(ref);
  const [cancelError, setCancelError] = useState<string | null>(null);
  useEffect(() => {
    if (job) onChange?.(job);
  }, [job?.status, job?.updated_at]);
  if (!job) return <p aria-busy="true">Loading {id}…</p>;
  const percent = job.progress?.percent ?? null;
  const cancel = async () => {
    setCancelError(null);
    try {
      setJob((await kindApi(ref.kind).cancel(id)) as AnyJob);
    } catch (err) {
      setCancelError(failure(err));
    }
  };
  return (
    <section class="job-progress" aria-label={`Job ${id}`}>
      <p role="status" data-status={job.status} data-percent={percent ?? ''}>
        <StatusBadge status={job.status} /> {job.progress?.phase ?? ''} {percent !== null ? `${percent}%` : ''}
      </p>
      {!terminal(job.status) && (
        <>
          <progress max={100} value={percent ?? undefined} aria-label={`Progress of ${id}`} />
          <button type="button" class="danger" onClick={() => void cancel()}>
            Cancel job
          </button>
        </>
      )}
      {job.error && <ErrorNote error={`${job.error.message} (${job.error.code})`} />}
      <ErrorNote error={error ?? cancelError} />
      {job.status === 'completed' && <Outputs refOf={ref} job={job} />}
    </section>
  );
}
