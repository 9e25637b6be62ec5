// One job through the gateway, as the e2e suites drive it: create it, read its row, wait for it to
// finish, read its ledger. Shared so every suite creates and reads jobs the same way.
import assert from 'node:assert/strict';
import type { Database } from '../../db/index.js';
import { ledgerForJob } from './ledger.js';
import { api } from './services.js';
import { waitFor, type Tenant } from './stack.js';

/** The body of a one-image nano-banana-2 job. */
export const imageBody = (t: Tenant, prompt: string) => ({ project_id: t.projectId, prompt, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });

/** Creates that image job through the gateway at `baseUrl`: its id. */
export async function createImage(baseUrl: string, t: Tenant, prompt: string): Promise<string> {
  const r = await api(baseUrl, t.apiKey).post('/v1/images/generate', imageBody(t, prompt));
  assert.equal(r.status, 200, r.text);
  return r.body.data.id as string;
}

/**
 * Creates a 16:9 video job of `model` (1 s at 480p unless `more` says otherwise) whose prompt
 * carries `marker`, and checks it starts on fal, the first route: its id.
 */
export async function createVideoOnFal(baseUrl: string, t: Tenant, model: string, marker: string, more: Record<string, unknown> = {}): Promise<string> {
  const r = await api(baseUrl, t.apiKey).post('/v1/videos/generate', {
    project_id: t.projectId,
    prompt: `a lighthouse at dusk ${marker}`,
    model,
    aspect_ratio: '16:9',
    duration: 1,
    resolution: '480p',
    ...more,
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data.provider, 'fal', 'new jobs start on the first route');
  return r.body.data.id as string;
}

/** A job's row. */
export const jobRow = (db: Database, id: string) => db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/** A job's row once it has completed or failed. */
export function jobFinished(db: Database, id: string, timeoutMs = 180_000) {
  return waitFor(
    `${id} to finish`,
    async () => {
      const row = await jobRow(db, id);
      return row.status === 'completed' || row.status === 'failed' ? row : undefined;
    },
    timeoutMs,
    200,
  );
}

/** A job's ledger entries as [reason, delta] pairs, oldest first. */
export const jobLedger = async (db: Database, id: string) => (await ledgerForJob(db, id)).map((l) => [l.reason, Number(l.delta)]);

/** Uploads a file through the gateway at `baseUrl` (POST /v1/upload, multipart): its upload id. */
export async function uploadFile(baseUrl: string, t: Tenant, bytes: Buffer, type: string, name: string): Promise<string> {
  const form = new FormData();
  form.append('project_id', t.projectId);
  form.append('file', new Blob([new Uint8Array(bytes)], { type }), name);
  const res = await fetch(`${baseUrl}/v1/upload`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: form });
  const body = (await res.json()) as { data?: { id: string } };
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.data!.id;
}
