// The job record's `substitution`: which route served a job when it is not the model's first, and
// which outputs were re-encoded (a JPEG stored as PNG, a video scaled to the asked frame).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { presentJob, type JobRow } from '../../shared/job-record.js';
import type { JobOutput } from '../../shared/job-model.js';

function row(model: string, kind: JobRow['kind'], params: Record<string, unknown>, outputs: JobOutput[]): JobRow {
  const at = new Date(0);
  return {
    id: 'job_1',
    kind,
    project_id: 'prj_1',
    model,
    status: 'completed',
    params: params as JobRow['params'],
    error: null,
    created_at: at,
    updated_at: at,
    phase: 'done' as JobRow['phase'],
    attempt: 1,
    percent: null,
    queue_position: null,
    webhook_url: null,
    webhook_events: null,
    outputs_removed_at: null,
    provider_attempts: [],
    price: 4,
    cancel_kept: null,
    canceled_after_submit_at: null,
    credits_charged: 0,
    credits_refunded: 0,
    priority: 'normal',
    outputs,
  };
}

test('a Seedream job served by BytePlus with its JPEG stored as PNG says both', () => {
  const record = presentJob(
    row(
      'seedream-4.5',
      'image',
      { prompt: 'p', aspect_ratio: '16:9', count: 1, provider: 'byteplus', provider_model_id: 'seedream-4-5-251128', deadline_seconds: 300 },
      [{ key: 'k/output-1.png', content_type: 'image/png', size: 10, converted_from: 'image/jpeg' }],
    ),
  );
  assert.deepEqual(record.substitution, {
    provider: 'byteplus',
    provider_model_id: 'seedream-4-5-251128',
    primary: 'fal',
    conversions: [{ output: 1, from: 'image/jpeg', to: 'image/png' }],
    summary: 'served by byteplus (seedream-4-5-251128) instead of fal, its first route; output 1 converted from image/jpeg to image/png',
  });
});

test('a replace-actor job scaled on Alibaba names the frame it was scaled from and to', () => {
  const record = presentJob(
    row(
      'replace-actor',
      'replace_actor',
      { aspect_ratio: '9:16', resolution: '720p', duration: 3, provider: 'alibaba', provider_model_id: 'wan2.2-animate-mix', deadline_seconds: 1800 },
      [{ key: 'k/output-1.mp4', content_type: 'video/mp4', size: 10, scaled_from: '480x854' }],
    ),
  );
  assert.deepEqual(record.substitution?.conversions, [{ output: 1, from: '480x854', to: '720x1280' }]);
});

test('a job served by its first route with nothing converted has no substitution', () => {
  const record = presentJob(
    row('seedream-4.5', 'image', { prompt: 'p', aspect_ratio: '1:1', count: 1, provider: 'fal', provider_model_id: 'x', deadline_seconds: 300 }, [
      { key: 'k/output-1.png', content_type: 'image/png', size: 10 },
    ]),
  );
  assert.equal('substitution' in record, false);
});
