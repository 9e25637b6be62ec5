// S3 on AWS: with S3_PATH_STYLE=false the bucket goes in the host name (virtual-hosted addressing,
// what S3 expects), signed for the configured region; path style keeps MinIO's `<endpoint>/<bucket>/<key>`.
// Presigning is computed locally (the region is configured, the keys are static): no request leaves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../shared/config.js';
import { createStorage } from '../../shared/storage.js';
import { awsCredentialSource } from '../../shared/aws-credentials.js';

const base = {
  DATABASE_URL: 'postgres://media@127.0.0.1:5432/media',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  S3_ACCESS_KEY: 'AKIAEXAMPLEEXAMPLE00',
  S3_SECRET_KEY: 'not-a-real-secret',
  S3_BUCKET: 'mediagen-outputs',
};

test('virtual-hosted addressing presigns https://<bucket>.s3.<region>.amazonaws.com/<key> for the region', async () => {
  const config = loadConfig({ ...base, S3_ENDPOINT: 'https://s3.eu-west-1.amazonaws.com', S3_REGION: 'eu-west-1', S3_PATH_STYLE: 'false' });
  assert.equal(config.S3_PATH_STYLE, false);
  const storage = createStorage(config);
  const url = new URL(await storage.url('jobs/j1/tok/output-1.png', 600));
  assert.equal(url.origin, 'https://mediagen-outputs.s3.eu-west-1.amazonaws.com');
  assert.equal(url.pathname, '/jobs/j1/tok/output-1.png');
  assert.match(url.searchParams.get('X-Amz-Credential')!, /^AKIAEXAMPLEEXAMPLE00\/\d{8}\/eu-west-1\/s3\/aws4_request$/);
  assert.equal(url.searchParams.get('X-Amz-Expires'), '600');

  const post = await storage.presignedPost('uploads/u1', { contentType: 'image/png', size: 10, expirySeconds: 600 });
  assert.equal(post.url, 'https://mediagen-outputs.s3.eu-west-1.amazonaws.com/');
  assert.equal(post.fields.key, 'uploads/u1');
});

test('path style (the default) keeps the bucket in the path, as MinIO serves it', async () => {
  const config = loadConfig({ ...base, S3_ENDPOINT: 'http://127.0.0.1:9000' });
  assert.equal(config.S3_PATH_STYLE, true);
  const url = new URL(await createStorage(config).url('jobs/j1/tok/output-1.png'));
  assert.equal(url.origin, 'http://127.0.0.1:9000');
  assert.equal(url.pathname, '/mediagen-outputs/jobs/j1/tok/output-1.png');
  assert.match(url.searchParams.get('X-Amz-Credential')!, /\/us-east-1\/s3\/aws4_request$/);
});

test('temporary keys from the environment (AWS_*) sign with their session token', async () => {
  const config = loadConfig({
    ...base,
    S3_ACCESS_KEY: '',
    S3_SECRET_KEY: '',
    S3_MEDIA_PREFIX_SECRET: 'prefix-secret',
    AWS_ACCESS_KEY_ID: 'ASIAEXAMPLEEXAMPLE00',
    AWS_SECRET_ACCESS_KEY: 'not-a-real-secret-either',
    AWS_SESSION_TOKEN: 'session-token-example',
    S3_ENDPOINT: 'https://s3.us-west-2.amazonaws.com',
    S3_REGION: 'us-west-2',
    S3_PATH_STYLE: 'false',
  });
  assert.equal(awsCredentialSource(config), 'environment');
  const url = new URL(await createStorage(config).url('k'));
  assert.equal(url.host, 'mediagen-outputs.s3.us-west-2.amazonaws.com');
  assert.match(url.searchParams.get('X-Amz-Credential')!, /^ASIAEXAMPLEEXAMPLE00\//);
  assert.equal(url.searchParams.get('X-Amz-Security-Token'), 'session-token-example');
});

test('the job media prefix is keyed by S3_MEDIA_PREFIX_SECRET, S3_SECRET_KEY when unset', () => {
  const endpoint = { S3_ENDPOINT: 'http://127.0.0.1:9000' };
  const fromSecretKey = createStorage(loadConfig({ ...base, ...endpoint })).jobMediaPrefix('job_1');
  const ownSecret = createStorage(loadConfig({ ...base, ...endpoint, S3_MEDIA_PREFIX_SECRET: 'other' })).jobMediaPrefix('job_1');
  assert.match(fromSecretKey, /^jobs\/job_1\/[A-Za-z0-9_-]{22}$/);
  assert.notEqual(fromSecretKey, ownSecret);
});
