// Encrypted payloads end to end on the real stack (Temporal, Postgres, MinIO): a job created through
// the gateway with a distinctive prompt and webhook URL leaves no clear text in Temporal — its
// history, its webhook delivery's history and their descriptions (memo, search attributes,
// summaries), read straight from the server over gRPC with no codec, hold none of those strings —
// while the codec server (bearer token, as the `temporal` CLI sends it) shows them decoded. The Web
// UI (ui-server 2.54.1, started here against the test stack's Temporal and pointed at the codec
// server) shows the prompt in headless Chromium once the operator has signed in on the codec server,
// and does not without that sign-in. Rotation: a workflow started under key a, its worker restarted
// with keys a,b active b, completes; its history holds payloads under both ids, and a client given
// keys b,a decodes the input sealed under a into the job's start and replays the history, while b
// alone can do neither.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { Worker } from '@temporalio/worker';
import protos from '@temporalio/proto';
import type { Config } from '../../shared/config.js';
import { createTenant, createTestDatabase, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, startGateway, startWorkers, type InProcessGateway, type Workers } from '../support/services.js';
import { imageBody, jobFinished } from '../support/job-helpers.js';
import { Receiver } from '../support/webhook-receiver.js';
import { launchChromium, type Browser } from '../support/chromium.js';
import { startCodecServer, type CodecServer } from '../../codec/server.js';
import { deliveriesOfJob } from '../../db/repos/webhooks.js';
import { runAdmin } from '../../admin/main.js';
import { codecDataConverter } from '../../codec/payload-codec.js';
import type { GenerationInput } from '../../workflows/definitions.js';

const { temporal } = protos;
const keyA = randomBytes(32).toString('base64');
const keyB = randomBytes(32).toString('base64');
const token = randomBytes(32).toString('base64url');
const uiServerBin = join(process.env.MEDIA_GEN_CACHE ?? join(homedir(), '.cache', 'media-gen'), 'temporal-ui-server-v2.54.1', 'server');

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Every byte Temporal holds on a workflow: its whole history and its description, protobuf-encoded. */
async function rawWorkflowBytes(connection: Connection, namespace: string, workflowId: string): Promise<Buffer> {
  const svc = connection.workflowService;
  const parts: Uint8Array[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await svc.getWorkflowExecutionHistory({ namespace, execution: { workflowId }, nextPageToken });
    parts.push(temporal.api.workflowservice.v1.GetWorkflowExecutionHistoryResponse.encode(page).finish());
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  const described = await svc.describeWorkflowExecution({ namespace, execution: { workflowId } });
  parts.push(temporal.api.workflowservice.v1.DescribeWorkflowExecutionResponse.encode(described).finish());
  return Buffer.concat(parts.map((p) => Buffer.from(p)));
}

type SealedPayload = protos.temporal.api.common.v1.IPayload;

/** Every payload sealed by the codec anywhere in a proto message (an event: inputs, results, markers, metadata). */
function sealedPayloadsOf(message: unknown, seen = new Set<unknown>()): SealedPayload[] {
  if (message === null || typeof message !== 'object' || seen.has(message) || message instanceof Uint8Array) return [];
  seen.add(message);
  const m = message as { metadata?: Record<string, Uint8Array>; data?: Uint8Array };
  if (m.metadata && typeof m.metadata === 'object' && m.metadata['encryption-key-id']) return [m as SealedPayload];
  return Object.values(message).flatMap((v) => sealedPayloadsOf(v, seen));
}

/** POST /decode on the codec server with the protocol's JSON (base64 metadata values and data). */
function decodeVia(url: string, payloads: SealedPayload[], headers: Record<string, string>): Promise<Response> {
  const body = {
    payloads: payloads.map((p) => ({
      metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
      data: Buffer.from(p.data ?? []).toString('base64'),
    })),
  };
  return fetch(`${url}/decode`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

const keyIdsIn = (raw: Buffer) => new Set([...raw.toString('latin1').matchAll(/encryption-key-id\x12\x01([ab])/g)].map((m) => m[1]));

describe('payload encryption: no clear text in Temporal, decoded for operators only', () => {
  let tdb: TestDatabase;
  let config: Config;
  let gw: InProcessGateway;
  let workers: Workers | null = null;
  let t: Tenant;
  let connection: Connection;
  let codec: CodecServer;
  let uiUrl: string;
  let ui: ChildProcess | null = null;
  let uiDir: string;
  const receiver = new Receiver();
  const marker = `zq${randomUUID().slice(0, 8)}`;
  const prompt = `a lighthouse painted by customer ${marker} at dusk`;
  let jobId: string;
  let runId: string;
  let promptEventId = 0;
  let hookPath: string;

  before(async () => {
    await receiver.start();
    tdb = await createTestDatabase();
    config = testConfig(tdb.url, { PAYLOAD_CODEC_KEYS: `a:${keyA}`, PAYLOAD_CODEC_KEY_ID: 'a', WEBHOOK_ALLOW_LOOPBACK: 'true' });
    gw = await startGateway(config, tdb.db);
    workers = await startWorkers(config, tdb.db);
    t = await createTenant(tdb.db, 1000);
    // A webhook URL on a job needs the workspace's signing secret.
    const rotated = await runAdmin(['webhook', 'secret', 'rotate', '--workspace', t.workspaceId, '--as', t.ownerEmail, '--json'], {
      ...process.env,
      DATABASE_URL: tdb.url,
    });
    assert.equal(rotated.code, 0, rotated.stderr);
    connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
    const uiPort = await freePort();
    uiUrl = `http://127.0.0.1:${uiPort}`;
    codec = await startCodecServer(
      {
        PAYLOAD_CODEC_KEYS: `a:${keyA},b:${keyB}`,
        PAYLOAD_CODEC_KEY_ID: 'b',
        CODEC_SERVER_TOKEN: token,
        CODEC_SERVER_PORT: '0',
        CODEC_SERVER_CORS_ORIGINS: uiUrl,
        HOST: '127.0.0.1',
        TEMPORAL_NAMESPACE: config.TEMPORAL_NAMESPACE,
      },
      pino({ level: 'silent' }),
    );
    // The Web UI of the test stack's Temporal, pointed at the codec server (as scripts/prod/ui/prod.yaml).
    uiDir = await mkdtemp(join(tmpdir(), 'codec-ui-'));
    await mkdir(join(uiDir, 'ui'));
    await writeFile(
      join(uiDir, 'ui', 'codec.yaml'),
      [
        `temporalGrpcAddress: ${config.TEMPORAL_ADDRESS}`,
        'host: 127.0.0.1',
        `port: ${uiPort}`,
        'enableUi: true',
        `defaultNamespace: ${config.TEMPORAL_NAMESPACE}`,
        'disableNewsFetch: true',
        'cors:',
        '  allowOrigins:',
        `    - ${uiUrl}`,
        'codec:',
        `  endpoint: ${codec.url}`,
        '  passAccessToken: false',
        '  includeCredentials: true',
        '',
      ].join('\n'),
    );
    ui = spawn(uiServerBin, ['--root', uiDir, '--config', 'ui', '--env', 'codec', 'start'], { stdio: 'ignore' });
    await waitFor('the Web UI to answer', async () => (await fetch(uiUrl).catch(() => null))?.ok, 60_000, 200);
  });

  after(async () => {
    await workers?.stop();
    await gw?.close();
    await codec?.close();
    ui?.kill('SIGTERM');
    await connection?.close();
    await receiver.close();
    await tdb?.drop();
    if (uiDir) await rm(uiDir, { recursive: true, force: true });
  });

  test(
    'a job and its webhook delivery leave no prompt or URL in Temporal; the codec server decodes them for a token holder',
    { timeout: 240_000 },
    async () => {
      hookPath = `/hooks/${marker}-receiver`;
      const r = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', {
        ...imageBody(t, prompt),
        webhook_url: `${receiver.base}${hookPath}`,
        webhook_events: ['completed'],
      });
      assert.equal(r.status, 200, r.text);
      jobId = r.body.data.id as string;
      assert.equal((await jobFinished(tdb.db, jobId)).status, 'completed');
      await waitFor('the webhook delivery', () => receiver.received.some((x) => x.path === hookPath), 120_000, 100);
      const [delivery] = await deliveriesOfJob(tdb.db, jobId);
      assert.ok(delivery, 'the job has a webhook delivery');
      await waitFor('the delivery workflow to close', async () => {
        const d = await connection.workflowService.describeWorkflowExecution({ namespace: config.TEMPORAL_NAMESPACE, execution: { workflowId: delivery.id } });
        return d.workflowExecutionInfo?.status !== temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING;
      });

      const receiverHost = new URL(receiver.base).host;
      for (const workflowId of [jobId, delivery.id]) {
        const raw = await rawWorkflowBytes(connection, config.TEMPORAL_NAMESPACE, workflowId);
        assert.ok(raw.length > 1000, 'a real history');
        const text = raw.toString('latin1');
        for (const secret of [marker, 'lighthouse', hookPath, receiverHost])
          assert.ok(!text.includes(secret), `${workflowId}: "${secret}" is not in the raw history or description`);
        assert.ok(text.includes('binary/encrypted'), `${workflowId}: its payloads are sealed`);
        assert.ok(text.includes(jobId), `${workflowId}: ids stay readable (summaries, search attributes)`);
      }

      // Decoded through the codec server, as the CLI (--codec-auth) and the Web UI ask for it: the
      // history's sealed payloads, event by event; the prompt is in the provider request's steps.
      const history = await connection.workflowService.getWorkflowExecutionHistory({ namespace: config.TEMPORAL_NAMESPACE, execution: { workflowId: jobId } });
      const events = history.history!.events!;
      runId = events[0]!.workflowExecutionStartedEventAttributes!.originalExecutionRunId!;
      const refused = await decodeVia(codec.url, [], {});
      assert.equal(refused.status, 401, 'no decoding without the token');
      const auth = { authorization: `Bearer ${token}`, 'x-namespace': config.TEMPORAL_NAMESPACE };
      for (const e of events) {
        const sealed = sealedPayloadsOf(e);
        if (sealed.length === 0) continue;
        const res = await decodeVia(codec.url, sealed, auth);
        assert.equal(res.status, 200);
        const texts = ((await res.json()) as { payloads: Array<{ data: string }> }).payloads.map((p) => Buffer.from(p.data, 'base64').toString('utf8'));
        if (texts.some((x) => x.includes(marker))) {
          promptEventId = Number(e.eventId);
          break;
        }
      }
      assert.ok(promptEventId > 0, 'an event of the history decodes to the prompt');
      const summary = events[0]!.userMetadata?.summary;
      assert.ok(summary, 'the workflow has a summary');
      const summaryText = ((await (await decodeVia(codec.url, [summary], auth)).json()) as { payloads: Array<{ data: string }> }).payloads[0]!.data;
      assert.ok(!Buffer.from(summaryText, 'base64').toString('utf8').includes(marker), 'the summary holds no prompt even decoded');
      assert.match(Buffer.from(summaryText, 'base64').toString('utf8'), /image · nano-banana-2/);

      // The `temporal` CLI with the codec endpoint and its auth shows the prompt; without, it does not.
      const cli = process.env.TEMPORAL_CLI_PATH || 'temporal';
      const show = (extra: string[]) =>
        promisify(execFile)(
          cli,
          [
            'workflow',
            'show',
            '--address',
            config.TEMPORAL_ADDRESS,
            '--namespace',
            config.TEMPORAL_NAMESPACE,
            '--workflow-id',
            jobId,
            '--output',
            'json',
            ...extra,
          ],
          {
            maxBuffer: 32 * 1024 * 1024,
            timeout: 60_000,
          },
        );
      // Its JSON output keeps payload data in base64: the prompt is looked for in the decoded data.
      const payloadTexts = (out: string): string[] => {
        const found: string[] = [];
        const walk = (v: unknown): void => {
          if (v === null || typeof v !== 'object') return;
          const o = v as { metadata?: unknown; data?: unknown };
          if (o.metadata && typeof o.data === 'string') found.push(Buffer.from(o.data, 'base64').toString('utf8'));
          for (const x of Object.values(v)) walk(x);
        };
        walk(JSON.parse(out));
        return found;
      };
      const plain = await show([]);
      assert.ok(!plain.stdout.includes(marker) && !payloadTexts(plain.stdout).some((x) => x.includes(marker)), 'no prompt without the codec');
      const withCodec = await show(['--codec-endpoint', codec.url, '--codec-auth', `Bearer ${token}`]);
      const cliTexts = [withCodec.stdout, ...payloadTexts(withCodec.stdout)];
      assert.ok(
        cliTexts.some((x) => x.includes(marker)),
        `the CLI shows the decoded prompt:\n${withCodec.stdout.slice(0, 2000)}`,
      );
    },
  );

  test('the Web UI shows the prompt once the operator signed in on the codec server, and not before', { timeout: 240_000 }, async () => {
    assert.ok(jobId && promptEventId > 0, 'the first test made the job and found its prompt event');
    // The history event that carries the prompt (found by the first test), on its own page.
    const page = `${uiUrl}/namespaces/${config.TEMPORAL_NAMESPACE}/workflows/${jobId}/${runId}/history/events/${promptEventId}`;
    // A tall window: the event's payload view renders only the lines in view.
    let browser: Browser | null = await launchChromium({ height: 8000 });
    try {
      const tab = await browser.newPage();
      // Not signed in: the UI renders the event, the codec server refuses, and the payloads stay
      // sealed (their `encoding` metadata, base64 of binary/encrypted, is what the page shows).
      await tab.navigate(page);
      const shown = await tab.waitForText(
        'the event page with its sealed payloads',
        (s) => s.includes(jobId) && s.includes(Buffer.from('binary/encrypted').toString('base64')),
        90_000,
      );
      assert.ok(!shown.includes(marker), 'without a sign-in the page holds no prompt');

      // The operator signs in on the codec server's page; its cookie rides along from the UI's origin.
      await tab.navigate(`${codec.url}/login`);
      await tab.evaluate(
        `(() => { document.querySelector('input[name=token]').value = ${JSON.stringify(token)}; document.forms[0].submit(); return true; })()`,
      );
      await tab.waitForText('the sign-in', (s) => s.includes('Signed in'), 30_000);
      await tab.navigate(page);
      const decoded = await tab.waitForText('the decoded prompt in the Web UI', (s) => s.includes(marker), 90_000);
      assert.ok(decoded.includes(jobId));
    } finally {
      await browser.close();
      browser = null;
    }
  });

  test(
    'rotation: a workflow started under key a completes on workers restarted with keys a,b active b, and its history decodes',
    { timeout: 240_000 },
    async () => {
      await workers!.stop();
      workers = null;
      const r = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', imageBody(t, `rotation ${marker}`));
      assert.equal(r.status, 200, r.text);
      const id = r.body.data.id as string;
      const rotated = testConfig(tdb.url, {
        PAYLOAD_CODEC_KEYS: `a:${keyA},b:${keyB}`,
        PAYLOAD_CODEC_KEY_ID: 'b',
        TASK_QUEUE_PREFIX: config.TASK_QUEUE_PREFIX,
      });
      workers = await startWorkers(rotated, tdb.db);
      assert.equal((await jobFinished(tdb.db, id)).status, 'completed');
      const raw = await rawWorkflowBytes(connection, config.TEMPORAL_NAMESPACE, id);
      assert.ok(!raw.toString('latin1').includes(marker));
      assert.deepEqual([...keyIdsIn(raw)].sort(), ['a', 'b'], 'the input sealed under a, what the rotated workers wrote under b');
      // The gateway (still on a alone) reads the result the b workers wrote only if it has b: an old
      // process missing the new key fails by naming it.
      const result = gw.client.workflow.getHandle(id).result();
      await assert.rejects(result, (err: Error) => /unknown key id "b"/.test(`${err.message} ${String((err as { cause?: Error }).cause?.message)}`));

      // The old history read after the rotation: a client holding b and a decodes the input the
      // gateway sealed under a into exactly the job's start, and the history replays through the
      // workflow code with those keys; with b alone, neither can read it.
      const history = await gw.client.workflow.getHandle(id).fetchHistory();
      const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
      const inputPayloads = started.input!.payloads!;
      assert.equal(Buffer.from(inputPayloads[0]!.metadata!['encryption-key-id']!).toString(), 'a', 'the input was sealed under the old key');
      const readerOf = (keys: string) =>
        new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, ...codecDataConverter({ PAYLOAD_CODEC_KEYS: keys, PAYLOAD_CODEC_KEY_ID: 'b' }) });
      const both = readerOf(`b:${keyB},a:${keyA}`);
      const input = await decodeFromPayloadsAtIndex<GenerationInput>(both.options.loadedDataConverter, 0, inputPayloads);
      const row = await tdb.db.selectFrom('jobs').select(['id', 'kind', 'model', 'params']).where('id', '=', id).executeTakeFirstOrThrow();
      assert.deepEqual(
        { jobId: input.jobId, kind: input.kind, model: input.model, provider: input.provider, taskQueuePrefix: input.taskQueuePrefix },
        { jobId: row.id, kind: row.kind, model: row.model, provider: (row.params as { provider: string }).provider, taskQueuePrefix: config.TASK_QUEUE_PREFIX },
      );
      const onlyB = readerOf(`b:${keyB}`);
      await assert.rejects(decodeFromPayloadsAtIndex(onlyB.options.loadedDataConverter, 0, inputPayloads), /unknown key id "a"/);

      const workflowBundle = { codePath: fileURLToPath(new URL('../../workflow-bundle.js', import.meta.url)) };
      const keysBA = { PAYLOAD_CODEC_KEYS: `b:${keyB},a:${keyA}`, PAYLOAD_CODEC_KEY_ID: 'b' };
      await Worker.runReplayHistory({ workflowBundle, ...codecDataConverter(keysBA) }, history, `${id}-rotated`);
      await assert.rejects(
        Worker.runReplayHistory(
          { workflowBundle, ...codecDataConverter({ PAYLOAD_CODEC_KEYS: `b:${keyB}`, PAYLOAD_CODEC_KEY_ID: 'b' }) },
          history,
          `${id}-b-only`,
        ),
        (err: Error) => {
          assert.match(`${err.message} ${String((err as { cause?: Error }).cause?.message)}`, /unknown key id \\?"a\\?"/);
          return true;
        },
      );
    },
  );
});
