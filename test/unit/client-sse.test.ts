// The client's pure parts: the event-stream parser (any chunking), job-id kinds, and the CLI's
// exit codes and overall percent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSseParser, kindOfJobId, MediaGenError } from '@mediagen/client';
import { exitCodeFor, overallPercent } from '@mediagen/client/cli';

const stream = ': heartbeat\n\nid: 1\nevent: status\ndata: {"status":"pending"}\n\nid: 2\r\nevent: status\r\ndata: {"status":\r\ndata: "completed"}\r\n\r\nevent: ignored-without-data\n\n';

test('the SSE parser yields whole events whatever the chunk boundaries, skipping comments', () => {
  const expected = [
    { event: 'status', data: '{"status":"pending"}', id: '1' },
    { event: 'status', data: '{"status":\n"completed"}', id: '2' },
  ];
  for (const size of [1, 2, 7, stream.length]) {
    const parse = createSseParser();
    const events = [];
    for (let i = 0; i < stream.length; i += size) events.push(...parse(stream.slice(i, i + size)));
    assert.deepEqual(events, expected, `chunks of ${size}`);
  }
});

test('job ids name their kind by prefix', () => {
  assert.equal(kindOfJobId('img_abc'), 'images');
  assert.equal(kindOfJobId('vid_abc'), 'videos');
  assert.equal(kindOfJobId('rpl_abc'), 'replace-actors');
  assert.equal(kindOfJobId('tlk_abc'), 'talking-actors');
  assert.equal(kindOfJobId('file_abc'), null);
});

test('the CLI maps answers to its documented exit codes', () => {
  const e = (status: number, code: string, body: unknown = null) => new MediaGenError({ status, code, message: code, body });
  assert.equal(exitCodeFor(e(400, 'invalid_request')), 2);
  assert.equal(exitCodeFor(e(404, 'not_found')), 3);
  assert.equal(exitCodeFor(e(401, 'unauthorized')), 4);
  assert.equal(exitCodeFor(e(403, 'forbidden')), 4);
  assert.equal(exitCodeFor(e(402, 'insufficient_credits')), 5);
  assert.equal(exitCodeFor(e(409, 'generation_failed', { status: 'failed' })), 6);
  assert.equal(exitCodeFor(e(409, 'not_ready', { status: 'generating' })), 1);
  assert.equal(exitCodeFor(e(429, 'rate_limited')), 1);
  assert.equal(exitCodeFor(new Error('boom')), 1);
});

test('the progress bar percent only grows through the phases', () => {
  const job = (status: string, phase?: string, percent: number | null = null) =>
    ({ status, ...(phase ? { progress: { phase, attempt: 1, percent, queue_position: null } } : {}) }) as never;
  const seq = [job('pending'), job('generating', 'queued'), job('generating', 'submitting'), job('generating', 'generating', 0), job('generating', 'generating', 50), job('generating', 'storing_outputs'), job('completed')];
  const p = seq.map(overallPercent);
  assert.deepEqual(p, [...p].sort((a, b) => a - b));
  assert.equal(p[0], 0);
  assert.equal(p.at(-1), 100);
});
