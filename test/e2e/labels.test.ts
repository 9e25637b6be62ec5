// Metadata and tags on the real stack (gateway over HTTP, the workflows on Temporal, Postgres, MinIO,
// the local renderer): every job kind and a pipeline take them at create (and in the dry run),
// echo them in their records, their signed webhook bodies and their event streams, a pipeline's
// step jobs carrying the pipeline's labels and their own; out-of-bounds labels are refused 400
// naming the field; the lists filter by `?tag=` (all of several) and `?metadata[k]=v` over the label
// index (its plan read with EXPLAIN, no timing); GET /v1/usage grouped by tag and by a metadata key
// equals the ledger rows summed per tag and per value, each job once per tag.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { verifyWebhook } from '@mediagen/client/webhooks';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, startService, waitForJobStatus, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { insertActor, insertUpload, insertVoice } from '../support/fixtures.js';
import { documentValidator } from '../support/openapi.js';
import { Receiver } from '../support/webhook-receiver.js';
import { openEventStream } from '../support/sse.js';
import { imageStep, videoStep } from '../support/pipeline-steps.js';
import { bulkInsertJobs, explainJobListPage } from '../support/job-rows.js';
import { runAdmin } from '../../admin/main.js';
import { MediaGenClient } from '@mediagen/client';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { jobStatuses } from '../../shared/job-model.js';

let suite: Service;
let tdb: TestDatabase;
let gw: Gateway;
let assertMatchesDocument: ReturnType<typeof documentValidator>;
const receiver = new Receiver();

before(async () => {
  suite = await startService({
    LOCAL_RENDER_FAULTS: 'true',
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    RECONCILE_INTERVAL_MS: '3600000',
    RATE_LIMIT_GENERATE_PER_MIN: '100000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
  });
  ({ tdb, gw } = suite);
  await receiver.start();
  const doc = await api(gw.baseUrl).get('/v1/openapi.json');
  assert.equal(doc.status, 200);
  assertMatchesDocument = documentValidator(doc.body);
});

after(async () => {
  await suite?.close();
  await receiver.close();
});

/** The workspace's webhook signing secret (the admin CLI's rotate). */
async function signingSecret(t: Tenant): Promise<string> {
  const r = await runAdmin(['webhook', 'secret', 'rotate', '--workspace', t.workspaceId, '--as', t.ownerEmail, '--json'], {
    ...process.env,
    DATABASE_URL: tdb.url,
  });
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { secret: string }).secret;
}

const kinds: { name: string; createPath: string; base: string; body(t: Tenant): Promise<Record<string, unknown>> }[] = [
  {
    name: 'image',
    createPath: '/v1/images/generate',
    base: '/v1/images',
    body: async (t) => ({ project_id: t.projectId, prompt: 'a labelled image', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 }),
  },
  {
    name: 'video',
    createPath: '/v1/videos/generate',
    base: '/v1/videos',
    body: async (t) => ({ project_id: t.projectId, prompt: 'a labelled video', model: 'seedance-1.5', aspect_ratio: '9:16', duration: 4, resolution: '480p' }),
  },
  {
    name: 'replace-actor',
    createPath: '/v1/replace-actors/generations',
    base: '/v1/replace-actors/generations',
    body: async (t) => ({
      project_id: t.projectId,
      image_file_id: await insertUpload(tdb.db, gw.storage, t, 'image'),
      video_file_id: await insertUpload(tdb.db, gw.storage, t, 'video'),
      duration: 3,
    }),
  },
  {
    name: 'talking-actor',
    createPath: '/v1/talking-actors/generate',
    base: '/v1/talking-actors',
    body: async (t) => {
      const voiceId = await insertVoice(tdb.db);
      return {
        project_id: t.projectId,
        actor_id: await insertActor(tdb.db, gw.storage, { defaultVoiceId: voiceId }),
        voice_id: voiceId,
        script: 'Hello there.',
      };
    },
  },
];

const labels = { metadata: { customer: 'cus_42', 'order.id': 'A/7 ünïcode & spaces' }, tags: ['acme', 'batch:2026-12'] };

describe('metadata and tags round-trip', () => {
  for (const kind of kinds) {
    test(`${kind.name}: echoed by the create, GET, the lists, the dry run, the signed webhook and the event stream`, async () => {
      const t = await createTenant(tdb.db, 10_000);
      const c = api(gw.baseUrl, t.apiKey);
      const secret = await signingSecret(t);
      const hook = `/hooks/${kind.name}/${t.workspaceId}`;
      const body = { ...(await kind.body(t)), ...labels, webhook_url: `${receiver.base}${hook}`, webhook_events: ['completed', 'failed'] };

      const dry = await c.post(`${kind.createPath}?dry_run=true`, body);
      assert.equal(dry.status, 200, dry.text);
      assertMatchesDocument('post', kind.createPath, dry);

      const created = await c.post(kind.createPath, body);
      assert.equal(created.status, 200, created.text);
      assertMatchesDocument('post', kind.createPath, created);
      const id = created.body.data.id as string;
      const done = await waitForJobStatus(c, `${kind.base}/${id}`, ['completed', 'failed']);
      assert.deepEqual([done.metadata, done.tags], [labels.metadata, labels.tags]);
      assertMatchesDocument('get', `${kind.base}/{id}`, await c.get(`${kind.base}/${id}`));

      const listed = await c.get(`${kind.base}?tag=acme`);
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(
        listed.body.data.map((j: any) => [j.id, j.metadata, j.tags]),
        [[id, labels.metadata, labels.tags]],
      );

      const delivered = await waitFor('the signed webhook', () => receiver.at(hook)[0], 60_000, 100);
      const event = verifyWebhook<any>(secret, delivered.body, delivered.headers);
      assert.equal(event.data.id, id);
      assert.deepEqual([event.data.metadata, event.data.tags], [labels.metadata, labels.tags]);

      const stream = await openEventStream(gw.baseUrl, `${kind.base}/${id}/events`, { authorization: `Bearer ${t.apiKey}` });
      assert.equal(stream.status, 200, stream.body);
      const [first] = await stream.waitForEvents(1);
      stream.close();
      const streamed = JSON.parse(first!.data);
      assert.deepEqual([streamed.id, streamed.metadata, streamed.tags], [id, labels.metadata, labels.tags]);
    });
  }

  test('a job created without labels shows {} and []', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const created = await c.post('/v1/images/generate', await kinds[0]!.body(t));
    assert.equal(created.status, 200, created.text);
    const got = await c.get(`/v1/images/${created.body.data.id}`);
    assert.deepEqual([got.body.data.metadata, got.body.data.tags], [{}, []]);
  });

  test("a pipeline: its record, list filters, webhook and stream echo its labels; its step jobs carry the pipeline's and the step's", async () => {
    const t = await createTenant(tdb.db, 10_000);
    const c = api(gw.baseUrl, t.apiKey);
    const secret = await signingSecret(t);
    const hook = `/hooks/pipeline/${t.workspaceId}`;
    const still = imageStep();
    const clip = videoStep();
    const body = {
      project_id: t.projectId,
      steps: [{ ...still, body: { ...still.body, tags: ['still-frame'], metadata: { stage: 'one', customer: 'cus_step' } } }, clip],
      webhook_url: `${receiver.base}${hook}`,
      ...labels,
    };
    const dry = await c.post('/v1/pipelines?dry_run=true', body);
    assert.equal(dry.status, 200, dry.text);
    const created = await c.post('/v1/pipelines', body);
    assert.equal(created.status, 200, created.text);
    assertMatchesDocument('post', '/v1/pipelines', created);
    const id = created.body.data.id as string;
    assert.deepEqual([created.body.data.metadata, created.body.data.tags], [labels.metadata, labels.tags]);
    const done = await waitFor(
      'the pipeline to end',
      async () => {
        const r = await c.get(`/v1/pipelines/${id}`);
        return ['completed', 'failed'].includes(r.body.data.status) ? r.body.data : undefined;
      },
      180_000,
      250,
    );
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    const [stillJob, clipJob] = await Promise.all([c.get(`/v1/images/${done.steps[0].job_id}`), c.get(`/v1/videos/${done.steps[1].job_id}`)]);
    assert.deepEqual(stillJob.body.data.metadata, { ...labels.metadata, stage: 'one', customer: 'cus_step' }, "the step's metadata wins a shared key");
    assert.deepEqual(stillJob.body.data.tags, [...labels.tags, 'still-frame']);
    assert.deepEqual([clipJob.body.data.metadata, clipJob.body.data.tags], [labels.metadata, labels.tags]);

    const listed = await c.get('/v1/pipelines?tag=acme&metadata[customer]=cus_42');
    assert.equal(listed.status, 200, listed.text);
    assertMatchesDocument('get', '/v1/pipelines', listed);
    assert.deepEqual(
      listed.body.data.map((p: any) => p.id),
      [id],
    );
    assert.deepEqual((await c.get('/v1/pipelines?tag=still-frame')).body.data, [], "a step's tag is its job's, not the pipeline's");
    const stepJobs = await c.get('/v1/jobs?tag=still-frame');
    assert.deepEqual(
      stepJobs.body.data.map((j: any) => j.id),
      [done.steps[0].job_id],
    );

    const delivered = await waitFor('the pipeline.completed webhook', () => receiver.at(hook).find((r) => r.body.includes('pipeline.completed')), 60_000, 100);
    const event = verifyWebhook<any>(secret, delivered.body, delivered.headers);
    assert.deepEqual([event.data.id, event.data.metadata, event.data.tags], [id, labels.metadata, labels.tags]);

    const stream = await openEventStream(gw.baseUrl, `/v1/pipelines/${id}/events`, { authorization: `Bearer ${t.apiKey}` });
    assert.equal(stream.status, 200, stream.body);
    const [first] = await stream.waitForEvents(1);
    stream.close();
    assert.deepEqual([JSON.parse(first!.data).metadata, JSON.parse(first!.data).tags], [labels.metadata, labels.tags]);
  });
});

describe('bounds', () => {
  const tooMany = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v']));
  const refused: [string, Record<string, unknown>, RegExp][] = [
    ['51 metadata keys', { metadata: tooMany }, /^metadata: at most 50 keys/],
    ['a 41-character key', { metadata: { ['k'.repeat(41)]: 'v' } }, /^metadata/],
    ['a key with a space', { metadata: { 'a b': 'v' } }, /^metadata/],
    ['a 501-character value', { metadata: { k: 'v'.repeat(501) } }, /^metadata\.k: values are at most 500 characters/],
    ['an empty value', { metadata: { k: '' } }, /^metadata\.k: values must not be empty/],
    ['a number value', { metadata: { k: 1 } }, /^metadata\.k/],
    ['metadata not an object', { metadata: ['a'] }, /^metadata/],
    ['21 tags', { tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, /^tags: at most 20 tags/],
    ['a 65-character tag', { tags: ['t'.repeat(65)] }, /^tags\.0: a tag is 1–64 characters/],
    ['a tag with a space', { tags: ['a b'] }, /^tags\.0: a tag is/],
    ['a repeated tag', { tags: ['a', 'a'] }, /^tags: tags must not repeat/],
    ['tags not an array', { tags: 'a' }, /^tags/],
  ];
  for (const [what, extra, message] of refused) {
    test(`${what}: 400 naming the field on a create, its dry run and a pipeline`, async () => {
      const t = await createTenant(tdb.db, 1000);
      const c = api(gw.baseUrl, t.apiKey);
      const body = { ...(await kinds[0]!.body(t)), ...extra };
      for (const path of ['/v1/images/generate', '/v1/images/generate?dry_run=true']) {
        const r = await c.post(path, body);
        assert.equal(r.status, 400, `${path}: ${r.text}`);
        assert.equal(r.body.error.code, 'invalid_request');
        assert.match(r.body.error.message, message, r.body.error.message);
        assertMatchesDocument('post', '/v1/images/generate', r);
      }
      const pipeline = await c.post('/v1/pipelines', { project_id: t.projectId, steps: [imageStep()], ...extra });
      assert.equal(pipeline.status, 400, pipeline.text);
      assert.match(pipeline.body.error.message, message);
      const step = await c.post('/v1/pipelines', { project_id: t.projectId, steps: [{ ...imageStep(), body: { ...imageStep().body, ...extra } }] });
      assert.equal(step.status, 400, step.text);
      assert.match(step.body.error.message, /^steps\[0\]\.body\.(metadata|tags)/);
      assert.equal(await jobCount(t), 0, 'nothing created');
    });
  }

  test("a step's labels with the pipeline's past a bound: 400 naming the step", async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const tags = (p: string) => Array.from({ length: 11 }, (_, i) => `${p}${i}`);
    const r = await c.post('/v1/pipelines', {
      project_id: t.projectId,
      tags: tags('p'),
      steps: [{ ...imageStep(), body: { ...imageStep().body, tags: tags('s') } }],
    });
    assert.equal(r.status, 400, r.text);
    assert.match(r.body.error.message, /^steps\[0\]\.body\.tags: with the pipeline's, more than 20 tags/);
  });

  test('list filters out of bounds: 400 naming the parameter', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    for (const [query, message] of [
      ['tag=a%20b', /^tag: .*is not a tag/],
      [Array.from({ length: 21 }, (_, i) => `tag=t${i}`).join('&'), /^tag/],
      ['metadata[a%20b]=v', /^metadata\[a b\]: a metadata key/],
      [`metadata[k]=${'v'.repeat(501)}`, /^metadata\[k\]: a metadata value is 1–500 characters/],
      ['metadata[k]=a&metadata[k]=b', /^metadata\[k\]: give one value/],
      ['metadata=x', /^metadata/],
    ] as const) {
      for (const path of ['/v1/jobs', '/v1/videos', '/v1/pipelines']) {
        const r = await c.get(`${path}?${query}`);
        assert.equal(r.status, 400, `${path}?${query}: ${r.text}`);
        assert.equal(r.body.error.code, 'invalid_request');
        assert.match(r.body.error.message, message, `${path}?${query}: ${r.body.error.message}`);
      }
    }
  });
});

async function jobCount(t: Tenant): Promise<number> {
  const r = await tdb.db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('workspace_id', '=', t.workspaceId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

describe('list filters', () => {
  test('?tag= (all of several) and ?metadata[k]=v page newest first, per kind, never across workspaces', async () => {
    const t = await createTenant(tdb.db, 10_000);
    const other = await createTenant(tdb.db, 10_000);
    const c = api(gw.baseUrl, t.apiKey);
    const made: { id: string; tags: string[]; metadata: Record<string, string>; kind: string }[] = [];
    const specs: { tags: string[]; metadata: Record<string, string>; kind: number }[] = [
      { tags: ['red', 'blue'], metadata: { customer: 'a' }, kind: 0 },
      { tags: ['red'], metadata: { customer: 'b' }, kind: 1 },
      { tags: ['red', 'blue'], metadata: { customer: 'b' }, kind: 0 },
      { tags: ['blue'], metadata: { customer: 'a', plan: 'pro' }, kind: 1 },
      { tags: ['red', 'blue', 'green'], metadata: { customer: 'a' }, kind: 0 },
      { tags: [], metadata: {}, kind: 0 },
    ];
    for (const s of specs) {
      const kind = kinds[s.kind]!;
      const r = await c.post(kind.createPath, { ...(await kind.body(t)), tags: s.tags, metadata: s.metadata });
      assert.equal(r.status, 200, r.text);
      made.push({ id: r.body.data.id, tags: s.tags, metadata: s.metadata, kind: kind.name });
    }
    const o = await api(gw.baseUrl, other.apiKey).post('/v1/images/generate', {
      ...(await kinds[0]!.body(other)),
      tags: ['red', 'blue'],
      metadata: { customer: 'a' },
    });
    assert.equal(o.status, 200, o.text);
    const newestFirst = [...made].reverse();
    const expect = (keep: (m: (typeof made)[number]) => boolean) => newestFirst.filter(keep).map((m) => m.id);
    const pages = async (path: string) => {
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const r = await c.get(`${path}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        assert.equal(r.status, 200, r.text);
        assertMatchesDocument('get', path.split('?')[0]!, r);
        ids.push(...r.body.data.map((j: any) => j.id));
        cursor = r.body.next_cursor;
      } while (cursor);
      return ids;
    };
    assert.deepEqual(
      await pages('/v1/jobs?tag=red'),
      expect((m) => m.tags.includes('red')),
    );
    assert.deepEqual(
      await pages('/v1/jobs?tag=red&tag=blue'),
      expect((m) => m.tags.includes('red') && m.tags.includes('blue')),
    );
    assert.deepEqual(
      await pages('/v1/jobs?tag=blue&tag=red&tag=green'),
      expect((m) => m.tags.includes('green')),
    );
    assert.deepEqual(
      await pages('/v1/jobs?metadata[customer]=a'),
      expect((m) => m.metadata.customer === 'a'),
    );
    assert.deepEqual(
      await pages('/v1/jobs?metadata[customer]=a&metadata[plan]=pro'),
      expect((m) => m.metadata.plan === 'pro'),
    );
    assert.deepEqual(
      await pages('/v1/jobs?tag=blue&metadata[customer]=b'),
      expect((m) => m.tags.includes('blue') && m.metadata.customer === 'b'),
    );
    assert.deepEqual(
      await pages('/v1/images?tag=blue'),
      expect((m) => m.tags.includes('blue') && m.kind === 'image'),
    );
    assert.deepEqual(
      await pages('/v1/videos?metadata[customer]=b'),
      expect((m) => m.metadata.customer === 'b' && m.kind === 'video'),
    );
    assert.deepEqual(await pages('/v1/jobs?tag=nowhere'), []);
    assert.deepEqual(await pages('/v1/jobs?metadata[customer]=A'), [], 'values match exactly');
  });

  test('a label filter walks the label index: the page reads about `limit` entries of 20,000 (EXPLAIN)', async () => {
    const t = await createTenant(tdb.db, 0);
    await bulkInsertJobs(tdb.db, t, 20_000, 'lbl');
    // Every job `common`, every 100th also `rare`, every 7th customer `c7`.
    await sql`
      insert into job_labels (workspace_id, label, created_at, job_id)
      select workspace_id, l, created_at, id from jobs
        cross join lateral unnest(array['t:common']
          || case when substr(id, 5)::int % 100 = 0 then array['t:rare'] else array[]::text[] end
          || case when substr(id, 5)::int % 7 = 0 then array['m:customer=c7'] else array[]::text[] end) l
      where workspace_id = ${t.workspaceId}`.execute(tdb.db);
    await sql`analyze job_labels`.execute(tdb.db);
    for (const labels of [['t:common'], ['t:rare'], ['m:customer=c7'], ['t:common', 'm:customer=c7']]) {
      const plan = (await explainJobListPage(tdb.db, t.workspaceId, { limit: 20, filters: { labels } })).join('\n');
      assert.match(plan, /Index (Only )?Scan( Backward)? using job_labels_pkey on job_labels l/, `${labels.join(' ')}\n${plan}`);
      assert.doesNotMatch(plan, /Seq Scan|Sort Method/, plan);
      assert.match(plan, /Index Scan using jobs_pkey on jobs j/, plan);
      // A page of 20 (+1) of the first label: the walk stops there whatever the workspace holds.
      const walked = /using job_labels_pkey on job_labels l .*actual time=[0-9.]+\.\.[0-9.]+ rows=([0-9]+)/.exec(plan);
      assert.ok(walked && Number(walked[1]) <= 21 * (labels.length > 1 ? 7 : 1) + 1, plan);
    }
  });
});

describe('usage grouped by label', () => {
  test('group_by=tag and group_by=metadata.customer equal the ledger rows summed per tag and per value; totals count each job once', async () => {
    const t = await createTenant(tdb.db, 100_000);
    const c = api(gw.baseUrl, t.apiKey);
    const specs = [
      { tags: ['acme', 'team:video'], metadata: { customer: 'cus_1' }, fail: false },
      { tags: ['acme'], metadata: { customer: 'cus_1' }, fail: true },
      { tags: ['globex', 'team:video'], metadata: { customer: 'cus_2' }, fail: false },
      { tags: ['globex'], metadata: {}, fail: false },
      { tags: [], metadata: { customer: 'cus_2' }, fail: true },
      { tags: [], metadata: {}, fail: false },
    ];
    const ids: string[] = [];
    for (const [i, s] of specs.entries()) {
      const prompt = `usage ${i}${s.fail ? ' [fail:terminal]' : ''}`;
      const r = await c.post('/v1/images/generate', { ...(await kinds[0]!.body(t)), prompt, count: 1 + (i % 3), tags: s.tags, metadata: s.metadata });
      assert.equal(r.status, 200, r.text);
      ids.push(r.body.data.id);
    }
    for (const id of ids) await waitForJobStatus(c, `/v1/images/${id}`, ['completed', 'failed']);

    // The ledger's own rows and the jobs' labels, summed here per group (not by the report's statement).
    const rows = await tdb.db
      .selectFrom('credit_ledger as l')
      .innerJoin('jobs as j', 'j.id', 'l.job_id')
      .select(['l.delta', 'l.reason', 'j.id', 'j.tags', 'j.metadata'])
      .where('l.workspace_id', '=', t.workspaceId)
      .execute();
    const jobs = await tdb.db.selectFrom('jobs').select(['id', 'tags', 'metadata', 'status']).where('workspace_id', '=', t.workspaceId).execute();
    type Sums = { spent: number; refunded: number; created: number } & Record<string, number>;
    const expected = (groupsOf: (j: { tags: string[]; metadata: Record<string, string> }) => (string | null)[]) => {
      const out = new Map<string | null, Sums>();
      const at = (g: string | null) =>
        out.get(g) ?? out.set(g, { spent: 0, refunded: 0, created: 0, ...Object.fromEntries(jobStatuses.map((s) => [s, 0])) }).get(g)!;
      for (const r of rows) {
        for (const g of groupsOf(r)) {
          if (r.reason === 'charge' || r.reason === 'recharge') at(g).spent -= r.delta;
          if (r.reason === 'refund') at(g).refunded += r.delta;
        }
      }
      for (const j of jobs) {
        for (const g of groupsOf(j)) {
          const sums = at(g);
          sums.created += 1;
          sums[j.status] = (sums[j.status] ?? 0) + 1;
        }
      }
      return out;
    };
    const answered = async (groupBy: string, field: (row: any) => string | null) => {
      const out = new Map<string | null, Sums>();
      let cursor: string | null = null;
      let totals: any;
      do {
        const r = await c.get(`/v1/usage?group_by=${groupBy}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        assert.equal(r.status, 200, r.text);
        for (const row of r.body.data) {
          const g = field(row);
          const s = out.get(g) ?? { spent: 0, refunded: 0, created: 0, ...Object.fromEntries(jobStatuses.map((st) => [st, 0])) };
          s.spent += row.credits.spent;
          s.refunded += row.credits.refunded;
          s.created += row.jobs.created;
          for (const st of jobStatuses) s[st] += row.jobs[st];
          out.set(g, s);
        }
        totals = r.body.totals;
        cursor = r.body.next_cursor;
      } while (cursor);
      return { groups: out, totals };
    };
    const sorted = (m: Map<string | null, Sums>) => [...m.entries()].sort(([a], [b]) => String(a).localeCompare(String(b)));

    const byTag = await answered('tag', (row) => row.tag);
    assert.deepEqual(sorted(byTag.groups), sorted(expected((j) => (j.tags.length ? j.tags : [null]))));
    assert.equal(byTag.groups.get('acme')!.spent > 0 && byTag.groups.get('team:video')!.spent > 0, true);
    const spent = rows.filter((r) => r.reason !== 'refund').reduce((n, r) => n - r.delta, 0);
    const refunded = rows.filter((r) => r.reason === 'refund').reduce((n, r) => n + r.delta, 0);
    assert.deepEqual([byTag.totals.credits.spent, byTag.totals.credits.refunded, byTag.totals.jobs.created], [spent, refunded, specs.length], 'each job once');

    const byCustomer = await answered('metadata.customer', (row) => row.metadata.customer);
    assert.deepEqual(sorted(byCustomer.groups), sorted(expected((j) => [j.metadata.customer ?? null])));
    assert.deepEqual([byCustomer.totals.credits.spent, byCustomer.totals.credits.refunded], [spent, refunded]);

    const csv = await c.call('GET', '/v1/usage?group_by=tag,metadata.customer', undefined, { accept: 'text/csv' });
    assert.equal(csv.status, 200, csv.text);
    assert.match(csv.text.split('\r\n')[0]!, /^period_start,tag,metadata\.customer,credits_spent/);

    const bad = await c.get('/v1/usage?group_by=metadata.a%20b');
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.body.error.code, 'invalid_request');
  });
});

const cli = fileURLToPath(new URL('../../../client/bin/mediagen.js', import.meta.url));

function mediagen(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the TypeScript client and the CLI', () => {
  test('create with labels and list by tag and metadata: the client sends tag=…&tag=… and metadata[k]=v; the CLI --tag / --metadata k=v', async () => {
    const t = await createTenant(tdb.db, 10_000);
    const mg = new MediaGenClient({ apiKey: t.apiKey, baseUrl: gw.baseUrl });
    const base = { project_id: t.projectId, prompt: 'client labels', model: 'nano-banana-2' as const, aspect_ratio: '1:1' as const, count: 1 };
    const both = await mg.images.generate({ ...base, tags: ['ts', 'both'], metadata: { customer: 'cus 9/ts' } });
    await mg.images.generate({ ...base, tags: ['ts'] });
    assert.deepEqual([both.metadata, both.tags], [{ customer: 'cus 9/ts' }, ['ts', 'both']]);
    assert.deepEqual(
      (await mg.jobs.list({ tag: ['ts', 'both'] })).data.map((j) => j.id),
      [both.id],
    );
    assert.deepEqual(
      (await mg.images.list({ metadata: { customer: 'cus 9/ts' } })).data.map((j) => j.id),
      [both.id],
    );
    assert.equal((await mg.jobs.list({ tag: 'ts' })).data.length, 2);

    const env = { MEDIAGEN_API_KEY: t.apiKey, MEDIAGEN_BASE_URL: gw.baseUrl };
    const made = await mediagen(
      ['images', 'generate', '--project', t.projectId, '--prompt', 'cli labels', '--tag', 'cli', '--tag', 'both', '--metadata', 'customer=cus=1', '--json'],
      env,
    );
    assert.equal(made.code, 0, made.stderr);
    const job = JSON.parse(made.stdout);
    assert.deepEqual([job.tags, job.metadata], [['cli', 'both'], { customer: 'cus=1' }]);
    const listed = await mediagen(['jobs', 'list', '--tag', 'both', '--metadata', 'customer=cus=1', '--json'], env);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      JSON.parse(listed.stdout).data.map((j: any) => j.id),
      [job.id],
    );
    const bad = await mediagen(['jobs', 'list', '--metadata', 'novalue'], env);
    assert.equal(bad.code, 2, bad.stderr);
  });
});
