// The one redaction of bearer-like URL and key parts (shared/redact.ts): upload tokens in keys and
// /media paths, a job's media prefix token, signed query values and URL credentials are replaced;
// ids, routes and harmless query values stay readable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redactedError, redactPath, redactText, redactUrl } from '../../shared/redact.js';

const token = 'k3v9w2m8q4r7t1y6u5p0z2x8';
const jobToken = 'AbCdEfGhIjKlMnOpQrStUv';

test('upload keys and media paths lose their token, keep workspace, upload id and extension', () => {
  assert.equal(redactPath(`uploads/ws_1/upl_2/${token}.png`), 'uploads/ws_1/upl_2/[redacted].png');
  assert.equal(redactPath(`incoming/ws_1/upl_2/${token}.mp4`), 'incoming/ws_1/upl_2/[redacted].mp4');
  assert.equal(redactPath(`/media/uploads/ws_1/upl_2/${token}.webp`), '/media/uploads/ws_1/upl_2/[redacted].webp');
  assert.equal(redactPath(`jobs/vid_1/${jobToken}/output-1.mp4`), 'jobs/vid_1/[redacted]/output-1.mp4');
});

test('API paths are left as they are', () => {
  for (const p of ['/v1/uploads/upl_2', '/v1/uploads/upl_2/complete', '/v1/jobs', '/v1/images/img_1/url', '/media/catalog/actors/a1/reference.png']) {
    assert.equal(redactPath(p), p);
  }
});

test('presigned and signed URLs lose their signature, credential and token values and any userinfo', () => {
  const url = `http://127.0.0.1:9000/media/uploads/ws_1/upl_2/${token}.png?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F2026&X-Amz-Date=20261126T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=deadbeef`;
  const out = redactUrl(url);
  assert.ok(!out.includes(token) && !out.includes('deadbeef') && !out.includes('AKIA'), out);
  assert.match(out, /X-Amz-Algorithm=AWS4-HMAC-SHA256/);
  assert.match(out, /X-Amz-Signature=\[redacted\]/);
  assert.equal(redactUrl('https://user:pw@cdn.example/a.png?token=abc&w=10'), 'https://[redacted]@cdn.example/a.png?token=[redacted]&w=10');
});

test('free text and errors: tokens inside messages and stacks are replaced', () => {
  const msg = `The specified key does not exist: uploads/ws_1/upl_2/${token}.png (GET http://s3/b/jobs/img_1/${jobToken}/output-1.png?X-Amz-Signature=feed)`;
  const out = redactText(msg);
  assert.ok(!out.includes(token) && !out.includes(jobToken) && !out.includes('feed)'), out);
  const err = Object.assign(new Error(msg), { key: `uploads/ws_1/upl_2/${token}.png`, code: 'NoSuchKey' });
  const field = redactedError(err);
  assert.equal(field.code, 'NoSuchKey');
  assert.ok(!JSON.stringify(field).includes(token), 'no property of the error carries the key');
});
