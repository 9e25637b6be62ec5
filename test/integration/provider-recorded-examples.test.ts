// The fakes answer as the providers document: for every recorded example (test/fixtures/
// provider-examples/*.json, copied from the provider's documentation with its source and the day it
// was read) the same call is made to the provider's fake, and its answer must have the example's
// shape — the same status, every documented field with the same JSON type (arrays by their first
// item), and no top-level field the example does not document (beyond the ones it names optional).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-providers/openai.js';
import { startFakeFal, type FakeFal } from '../support/fake-providers/fal.js';
import { startFakeXai, type FakeXai } from '../support/fake-providers/xai.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-providers/elevenlabs.js';
import { startFakeAzure, type FakeAzure } from '../support/fake-providers/azure.js';

interface Example {
  name: string;
  source: { url: string; read: string };
  request: { method: string; path?: string; body?: unknown; shutdownDate?: string; cancel?: 'queued' | 'running' | 'completed'; poll?: boolean };
  status: number;
  body: unknown;
  optional?: string[];
}

const dir = fileURLToPath(new URL('../../../test/fixtures/provider-examples/', import.meta.url));
const recorded = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => JSON.parse(readFileSync(`${dir}${f}`, 'utf8')) as { provider: string; examples: Example[] });

const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** Where `got` differs in shape from the documented `want` (paths), empty when it has the shape. */
function shapeProblems(want: unknown, got: unknown, path = '$'): string[] {
  if (typeOf(want) !== typeOf(got)) return [`${path}: documented ${typeOf(want)}, answered ${typeOf(got)}`];
  if (Array.isArray(want)) return want.length && (got as unknown[]).length ? shapeProblems(want[0], (got as unknown[])[0], `${path}[0]`) : [];
  if (typeOf(want) !== 'object') return [];
  const g = got as Record<string, unknown>;
  return Object.entries(want as Record<string, unknown>).flatMap(([k, v]) => (k in g ? shapeProblems(v, g[k], `${path}.${k}`) : [`${path}.${k}: missing`]));
}

function assertShape(ex: Example, status: number, body: unknown): void {
  assert.equal(status, ex.status, `${ex.name}: status`);
  assert.deepEqual(shapeProblems(ex.body, body), [], `${ex.name} (${ex.source.url}): ${JSON.stringify(body).slice(0, 400)}`);
  if (typeOf(ex.body) === 'object') {
    const documented = new Set([...Object.keys(ex.body as object), ...(ex.optional ?? [])]);
    assert.deepEqual(
      Object.keys(body as object).filter((k) => !documented.has(k)),
      [],
      `${ex.name}: fields the example does not document`,
    );
  }
}

let openai: FakeOpenAI;
let fal: FakeFal;
let xai: FakeXai;
let elevenlabs: FakeElevenLabs;
let azure: FakeAzure;

before(async () => {
  [openai, fal, xai, elevenlabs, azure] = await Promise.all([startFakeOpenAI(), startFakeFal(), startFakeXai(), startFakeElevenLabs(), startFakeAzure()]);
});
after(async () => {
  await Promise.all([openai?.close(), fal?.close(), xai?.close(), elevenlabs?.close(), azure?.close()]);
});

/** Answers the example's call on the provider's fake: its status and JSON body. */
const answer: Record<string, (ex: Example) => Promise<{ status: number; body: unknown }>> = {
  async openai(ex) {
    if (ex.request.shutdownDate) openai.shutdownDates.set(ex.request.path!.split('/').pop()!, ex.request.shutdownDate);
    const res = await fetch(`${openai.url}${ex.request.path}`, {
      method: ex.request.method,
      headers: { authorization: `Bearer ${openai.key}`, 'content-type': 'application/json' },
      ...(ex.request.body ? { body: JSON.stringify(ex.request.body) } : {}),
    });
    return { status: res.status, body: await res.json() };
  },
  async fal(ex) {
    const headers = { authorization: `Key ${fal.key}`, 'content-type': 'application/json' };
    if (!ex.request.cancel) {
      const res = await fetch(`${fal.url}${ex.request.path}`, { method: ex.request.method, headers, body: JSON.stringify(ex.request.body) });
      return { status: res.status, body: await res.json() };
    }
    // A request in the state the example cancels: queued (no status asked yet), running, or completed.
    fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
    const submitted = (await (
      await fetch(`${fal.url}/fal-ai/nano-banana-2`, { method: 'POST', headers, body: JSON.stringify({ prompt: 'a cat on a windowsill' }) })
    ).json()) as { status_url: string; cancel_url: string };
    const polls = { queued: 0, running: 2, completed: 3 }[ex.request.cancel];
    for (let i = 0; i < polls; i++) await fetch(submitted.status_url, { headers });
    const res = await fetch(submitted.cancel_url, { method: 'PUT', headers });
    return { status: res.status, body: await res.json() };
  },
};

const xaiCall = async (path: string, init: RequestInit = {}) => {
  const res = await fetch(`${xai.url}${path}`, { ...init, headers: { authorization: `Bearer ${xai.key}`, 'content-type': 'application/json' } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
answer.xai = async (ex) => {
  if (!ex.request.poll) return xaiCall(ex.request.path!, { method: 'POST', body: JSON.stringify(ex.request.body) });
  // A request polled until done (the fake answers 202 while pending).
  xai.pendingPolls = 0;
  const { body } = await xaiCall('/v1/videos/generations', {
    method: 'POST',
    body: JSON.stringify({ prompt: 'A cat playing with a ball', model: 'grok-imagine-video', duration: 6 }),
  });
  return xaiCall(`/v1/videos/${String(body.request_id)}`);
};
answer.elevenlabs = async (ex) => {
  const res = await fetch(`${elevenlabs.url}${ex.request.path}`, { headers: { 'xi-api-key': elevenlabs.key } });
  return { status: res.status, body: await res.json() };
};

answer.azure = async (ex) => {
  // The example's deployment is the fake's: its path names the deployment the fake serves.
  const res = await fetch(`${azure.url}${ex.request.path}`, {
    method: ex.request.method,
    headers: { 'api-key': azure.key, 'content-type': 'application/json' },
    body: JSON.stringify(ex.request.body),
  });
  return { status: res.status, body: await res.json() };
};

describe("the fakes answer the providers' recorded examples", () => {
  test('every recorded example names its source and the day it was read, and its provider has a fake here', () => {
    assert.ok(recorded.length > 0);
    for (const file of recorded)
      for (const ex of file.examples) {
        assert.ok(ex.source.url && /^\d{4}-\d{2}-\d{2}$/.test(ex.source.read), `${file.provider}: ${ex.name}`);
        assert.ok(answer[file.provider], `no fake call for ${file.provider}`);
      }
  });

  for (const file of recorded)
    for (const ex of file.examples)
      test(`${file.provider}: ${ex.name}`, async () => {
        const { status, body } = await answer[file.provider]!(ex);
        assertShape(ex, status, body);
      });
});
