// An image create's output format on the real stack (gateway over HTTP, Temporal, Postgres, MinIO,
// the local fal queue answering PNG): output_format jpeg or webp stores the image in that format at
// the asked quality (its URL serves it with that type), the record echoes what was asked and lists no
// substitution, a quality beside png is refused before any charge, GET /v1/models lists the formats,
// and two creates that differ only in their format are two requests to reuse.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, assertApiError, creditsOf, type InProcessGateway as Gateway } from '../support/services.js';
import { falRequestsWith, startFailoverStack, type FailoverStack } from '../support/failover-stack.js';
import { imageBody, jobFinished, jobLedger } from '../support/job-helpers.js';
import type { FakeFal } from '../support/fake-providers/fal.js';

let stack: FailoverStack;
let tdb: TestDatabase;
let fal: FakeFal;
let gw: Gateway;
const price = 4; // nano-banana-2, one image

before(async () => {
  stack = await startFailoverStack({ roles: 'workflows,io,fetch,provider:fal' });
  ({ tdb, fal, gw } = stack);
  fal.flow = ['COMPLETED'];
});
after(() => stack?.close());

/** The first bytes of each format's files. */
const magic = { jpeg: [0xff, 0xd8, 0xff], webp: [0x52, 0x49, 0x46, 0x46], png: [0x89, 0x50, 0x4e, 0x47] } as const;

async function createAndFinish(t: Tenant, body: Record<string, unknown>) {
  const r = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', body);
  assert.equal(r.status, 200, r.text);
  const row = await jobFinished(tdb.db, r.body.data.id as string);
  assert.equal(row.status, 'completed', JSON.stringify(row.error));
  return row;
}

async function download(t: Tenant, id: string): Promise<{ type: string | null; bytes: Buffer }> {
  const url = await api(gw.baseUrl, t.apiKey).get(`/v1/images/${id}/url`);
  assert.equal(url.status, 200, url.text);
  const res = await fetch(url.body.data.url as string);
  assert.equal(res.status, 200);
  return { type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) };
}

describe('image output format', () => {
  for (const [format, quality, mime] of [
    ['jpeg', 60, 'image/jpeg'],
    ['webp', undefined, 'image/webp'],
  ] as const) {
    test(`output_format ${format}${quality ? ` at quality ${quality}` : ''}: stored and served as ${mime}, the record echoes it, charged the same price`, async () => {
      const t = await createTenant(tdb.db, 100);
      const asked = { output_format: format, ...(quality ? { output_quality: quality } : {}) };
      const row = await createAndFinish(t, { ...imageBody(t, `a lighthouse [format-${format}]`), ...asked });
      assert.equal(row.outputs?.[0]?.content_type, mime);
      const file = await download(t, row.id);
      assert.equal(file.type, mime);
      assert.deepEqual([...file.bytes.subarray(0, magic[format].length)], [...magic[format]]);
      const record = (await api(gw.baseUrl, t.apiKey).get(`/v1/images/${row.id}`)).body.data;
      assert.equal(record.output_format, format);
      assert.equal(record.output_quality, quality);
      assert.equal(record.substitution, undefined, 'the asked format is no substitution');
      assert.deepEqual(await jobLedger(tdb.db, row.id), [['charge', -price]]);
    });
  }

  test('png stays the default; a quality beside png is refused before any charge; GET /v1/models lists the formats', async () => {
    const t = await createTenant(tdb.db, 100);
    const row = await createAndFinish(t, imageBody(t, 'a lighthouse [format-default]'));
    assert.equal(row.outputs?.[0]?.content_type, 'image/png');
    assert.deepEqual([...(await download(t, row.id)).bytes.subarray(0, 4)], [...magic.png]);
    const record = (await api(gw.baseUrl, t.apiKey).get(`/v1/images/${row.id}`)).body.data;
    assert.equal('output_format' in record, false, 'a create that asked nothing shows nothing');

    for (const body of [{ output_quality: 50 }, { output_format: 'png', output_quality: 50 }]) {
      const refused = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', { ...imageBody(t, 'x'), ...body });
      assertApiError(refused, 400, 'invalid_request');
      assert.match(refused.body.error.message, /output_quality: png is lossless/);
    }
    const bad = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', { ...imageBody(t, 'x'), output_format: 'gif' });
    assertApiError(bad, 400, 'invalid_request');
    assert.equal(await creditsOf(tdb.db, t), 100 - price);

    const models = (await api(gw.baseUrl, t.apiKey).get('/v1/models')).body.data as {
      name: string;
      kind: string;
      output_formats: string[];
      inputs: string[];
    }[];
    const banana = models.find((m) => m.name === 'nano-banana-2')!;
    assert.deepEqual(banana.output_formats, ['png', 'jpeg', 'webp']);
    assert.ok(banana.inputs.includes('output_format') && banana.inputs.includes('output_quality'));
    assert.deepEqual(models.find((m) => m.kind === 'video')!.output_formats, ['mp4']);
  });

  test('the format is part of the request: with reuse, png and jpeg are two generations, a second jpeg none', async () => {
    const t = await createTenant(tdb.db, 100);
    const marker = '[format-reuse]';
    const body = { ...imageBody(t, `a lighthouse ${marker}`), reuse: true };
    const png = await createAndFinish(t, body);
    const jpeg = await createAndFinish(t, { ...body, output_format: 'jpeg' });
    assert.equal(jpeg.reused_from, null);
    const again = await createAndFinish(t, { ...body, output_format: 'jpeg' });
    assert.equal(again.reused_from, jpeg.id);
    assert.equal(again.outputs?.[0]?.content_type, 'image/jpeg');
    assert.notEqual(png.id, jpeg.id);
    assert.equal(falRequestsWith(fal, 'submit', marker), 2);
  });
});
