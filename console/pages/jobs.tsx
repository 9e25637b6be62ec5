// Jobs: GET /v1/jobs with its filters (status, model, project, priority), newest first, by pages.
import { useState } from 'preact/hooks';
import type { JobListQuery } from '@mediagen/client';
import { client } from '../api.js';
import { ErrorNote, StatusBadge, useLoad, when } from '../ui.js';

export function JobsPage() {
  const [filters, setFilters] = useState<JobListQuery>({ limit: 25 });
  const [cursors, setCursors] = useState<string[]>([]);
  const page = useLoad(
    () => client.jobs.list({ ...filters, ...(cursors.length ? { cursor: cursors[cursors.length - 1]! } : {}) }),
    [JSON.stringify(filters), cursors.length],
  );
  const apply = (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    const q: JobListQuery = { limit: 25 };
    for (const k of ['status', 'model', 'project_id', 'priority'] as const) {
      const v = String(f.get(k) ?? '').trim();
      if (v) (q as Record<string, string>)[k] = v;
    }
    setCursors([]);
    setFilters(q);
  };
  return (
    <>
      <h1>Jobs</h1>
      <form class="filters" onSubmit={apply} aria-label="Filter jobs">
        <label>
          Status
          <select name="status">
            <option value="">any</option>
            {['pending', 'generating', 'completed', 'failed'].map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Model
          <input name="model" />
        </label>
        <label>
          Project
          <input name="project_id" />
        </label>
        <label>
          Priority
          <select name="priority">
            <option value="">any</option>
            {['high', 'normal', 'low'].map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <button type="submit">Apply filters</button>
      </form>
      <ErrorNote error={page.error} />
      <div class="table-wrap" tabIndex={0} role="region" aria-label="Jobs">
        <table>
          <caption class="sr-only">Jobs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Job</th>
              <th scope="col">Status</th>
              <th scope="col">Model</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {(page.value?.data ?? []).map((j) => (
              <tr key={j.id}>
                <td>
                  <a href={`#/jobs/${j.id}`}>{j.id}</a>
                </td>
                <td>
                  <StatusBadge status={j.status} />
                </td>
                <td>{'model' in j ? String(j.model) : '—'}</td>
                <td>{when(j.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {page.value?.next_cursor && (
        <button type="button" onClick={() => setCursors([...cursors, page.value!.next_cursor!])}>
          Older jobs
        </button>
      )}
    </>
  );
}
