// POST /v1/upload over HTTP against the real gateway, Postgres and MinIO: every accepted type with
// real ffmpeg-made files, a spoofed type, both size limits crossed mid-stream (no object, no
// incomplete multipart upload, no row left), ownership and malformed requests.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { Client as MinioClient } from 'minio';
import { MB } from '../../shared/media/type.js';
import { createTestDatabase, createTenant, rawMinioClient, testConfig, type TestDatabase, type Tenant } from '../support/stack.js';
import { startGateway, type InProcessGateway as Gateway } from '../support/services.js';
import { makeSampleMedia, type SampleMedia } from '../support/https-server.js';
import type { Config } from '../../shared/config.js';

let tdb: TestDatabase;
let config: Config;
let gw: Gateway;
let base: string;
let minio: MinioClient;
let media: SampleMedia;
let owner: Tenant; // successful uploads
let clean: Tenant; // refused uploads only: must end with nothing stored

before(async () => {
  tdb = await createTestDatabase();
  config = testConfig(tdb.url, { RATE_LIMIT_GENERATE_PER_MIN: '10000' }); // rate limits are the gateway suite's subject
  gw = await startGateway(config, tdb.db);
  base = gw.baseUrl;
  minio = rawMinioClient(config);
  media = await makeSampleMedia(config.FFMPEG_PATH);
  owner = await createTenant(tdb.db);
  clean = await createTenant(tdb.db);
});

after(async () => {
  await gw?.close();
  await tdb?.drop();
});

async function upload(tenant: Tenant, parts: Array<[string, string | Blob, string?]>) {
  const form = new FormData();
  for (const [name, value, filename] of parts) {
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, value, filename ?? 'file.bin');
  }
  const res = await fetch(`${base}/v1/upload`, { method: 'POST', headers: { authorization: `Bearer ${tenant.apiKey}` }, body: form });
  return { status: res.status, body: (await res.json()) as { data?: Record<string, unknown>; error?: { code: string; message: string } } };
}

/** Objects, incomplete multipart uploads and rows of a workspace. */
async function storedFor(workspaceId: string) {
  const prefix = `uploads/${workspaceId}/`;
  const objects: string[] = [];
  for await (const o of minio.listObjectsV2(config.S3_BUCKET, prefix, true)) objects.push((o as { name: string }).name);
  const incomplete: string[] = [];
  for await (const u of minio.listIncompleteUploads(config.S3_BUCKET, prefix, true)) incomplete.push((u as { key: string }).key);
  const rows = await tdb.db.selectFrom('file_uploads').select('id').where('workspace_id', '=', workspaceId).execute();
  return { objects, incomplete, rows: rows.length };
}

async function assertNothingStored(tenant: Tenant) {
  assert.deepEqual(await storedFor(tenant.workspaceId), { objects: [], incomplete: [], rows: 0 });
}

const names: Record<string, string> = {
  'image/jpeg': 'photo.jpg',
  'image/png': 'picture.png',
  'image/webp': 'art.webp',
  'video/mp4': 'clip.mp4',
  'video/quicktime': 'clip.mov',
  'video/webm': 'clip.webm',
};

describe('POST /v1/upload', () => {
  for (const mime of ['image/jpeg', 'image/png', 'image/webp', 'video/mp4', 'video/quicktime', 'video/webm'] as const) {
    test(`accepts ${mime} and serves it back at path`, async () => {
      const bytes = media[mime];
      const r = await upload(owner, [
        ['project_id', owner.projectId],
        ['file', new Blob([bytes], { type: mime }), names[mime]],
      ]);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const d = r.body.data!;
      assert.deepEqual(Object.keys(d).sort(), [
        'created_at',
        'expires_at',
        'file_size',
        'file_type',
        'id',
        'mime_type',
        'name',
        'path',
        'project_id',
        'updated_at',
        'workspace_id',
      ]);
      assert.equal(d.mime_type, mime);
      assert.equal(d.file_type, mime.split('/')[0]);
      assert.equal(d.file_size, bytes.length);
      assert.equal(d.name, names[mime]);
      assert.equal(d.workspace_id, owner.workspaceId);
      assert.equal(d.project_id, owner.projectId);
      assert.equal(typeof d.created_at, 'number');
      assert.equal(typeof d.updated_at, 'number');
      const path = String(d.path);
      assert.match(path, new RegExp(`^${base}/media/uploads/${owner.workspaceId}/${String(d.id)}/[0-9a-z]{24}\\.`));
      const served = await fetch(path);
      assert.equal(served.status, 200);
      assert.deepEqual(Buffer.from(await served.arrayBuffer()), bytes);
      const row = await tdb.db.selectFrom('file_uploads').selectAll().where('id', '=', String(d.id)).executeTakeFirstOrThrow();
      assert.equal(row.status, 'completed');
    });
  }

  test('project_id after the file, and no declared type, are fine', async () => {
    const r = await upload(owner, [
      ['file', new Blob([media['image/png']], { type: 'application/octet-stream' }), 'late.png'],
      ['project_id', owner.projectId],
    ]);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data!.mime_type, 'image/png');
  });

  test('a declared type that disagrees with the bytes is refused (400), nothing stored', async () => {
    const r = await upload(clean, [
      ['project_id', clean.projectId],
      ['file', new Blob([media['image/png']], { type: 'image/jpeg' }), 'fake.jpg'],
    ]);
    assert.equal(r.status, 400);
    assert.equal(r.body.error!.code, 'invalid_request');
    assert.match(r.body.error!.message, /does not match/);
    await assertNothingStored(clean);
  });

  test('a file of an unaccepted type (GIF, Matroska) is refused (400), nothing stored', async () => {
    for (const [bytes, name] of [
      [media.gif, 'a.gif'],
      [media.mkv, 'a.mkv'],
    ] as const) {
      const r = await upload(clean, [
        ['project_id', clean.projectId],
        ['file', new Blob([bytes]), name],
      ]);
      assert.equal(r.status, 400);
      assert.match(r.body.error!.message, /unsupported/);
    }
    await assertNothingStored(clean);
  });

  test('an image over 10 MB is refused with 413, nothing stored', async () => {
    const big = Buffer.concat([media['image/png'], Buffer.alloc(10 * MB + 1 - media['image/png'].length)]);
    const r = await upload(clean, [
      ['project_id', clean.projectId],
      ['file', new Blob([big], { type: 'image/png' }), 'big.png'],
    ]);
    assert.equal(r.status, 413);
    assert.equal(r.body.error!.code, 'payload_too_large');
    assert.match(r.body.error!.message, /10 MB/);
    await assertNothingStored(clean);
  });

  test('a video over 20 MB is cut mid-stream with 413, nothing stored', async () => {
    // Written chunk by chunk: the answer must arrive long before the 40 MB body is sent.
    const boundary = 'x-boundary-7d1a';
    const preamble = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="project_id"\r\n\r\n${clean.projectId}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="huge.mp4"\r\nContent-Type: video/mp4\r\n\r\n`,
    );
    const total = 40 * MB;
    const req = http.request(`${base}/v1/upload`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${clean.apiKey}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(preamble.length + total),
      },
    });
    const response = new Promise<{ status: number; body: string; sentWhenAnswered: number }>((resolve, reject) => {
      req.on('response', (res) => {
        const answeredAt = sent;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, sentWhenAnswered: answeredAt }));
      });
      req.on('error', reject);
    });
    let sent = 0;
    let answered = false;
    void response.then(
      () => (answered = true),
      () => (answered = true),
    );
    req.write(preamble);
    const chunk = Buffer.alloc(256 * 1024);
    media['video/mp4'].copy(chunk); // a real MP4 header, then filler
    while (sent < total && !answered && !req.destroyed) {
      const ok = req.write(sent === 0 ? chunk : Buffer.alloc(chunk.length));
      sent += chunk.length;
      if (!ok) {
        await new Promise<void>((resolve) => {
          const done = () => {
            req.off('drain', done);
            req.off('close', done);
            clearInterval(poll);
            resolve();
          };
          // The answer may come while the socket is blocked: check for it too.
          const poll = setInterval(() => answered && done(), 20);
          req.on('drain', done);
          req.on('close', done);
        });
      }
    }
    const r = await response;
    req.destroy();
    assert.equal(r.status, 413, r.body);
    assert.equal(JSON.parse(r.body).error.code, 'payload_too_large');
    assert.ok(r.sentWhenAnswered < total, `answered after ${r.sentWhenAnswered} of ${total} bytes`);
    await assertNothingStored(clean);
  });

  test('a 15 MB video with project_id after it streams to storage in parts and is stored byte for byte', async () => {
    const bytes = Buffer.concat([media['video/mp4'], randomBytes(15 * MB - media['video/mp4'].length)]);
    const r = await upload(owner, [
      ['file', new Blob([bytes], { type: 'video/mp4' }), 'large.mp4'],
      ['project_id', owner.projectId],
    ]);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data!.file_size, bytes.length);
    const row = await tdb.db.selectFrom('file_uploads').select('object_key').where('id', '=', String(r.body.data!.id)).executeTakeFirstOrThrow();
    assert.match((await minio.statObject(config.S3_BUCKET, row.object_key)).etag, /-[2-9]$/, 'stored as a multipart upload');
    const served = Buffer.from(await (await fetch(String(r.body.data!.path))).arrayBuffer());
    assert.ok(served.equals(bytes));
  });

  test('more than 64 KB after a large file part (here an epilogue) is refused with 400, nothing stored', async () => {
    const boundary = 'x-boundary-epilogue';
    const file = Buffer.concat([media['video/mp4'], Buffer.alloc(8 * MB)]);
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="project_id"\r\n\r\n${clean.projectId}\r\n`),
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.mp4"\r\nContent-Type: video/mp4\r\n\r\n`),
      file,
      Buffer.from(`\r\n--${boundary}--\r\n`),
      Buffer.alloc(200 * 1024, 0x20), // an epilogue: ignored by multipart parsers, but it is body
    ]);
    const res = await fetch(`${base}/v1/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${clean.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
    });
    const answer = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(res.status, 400, JSON.stringify(answer));
    assert.match(answer.error.message, /at most 64 KB after the file part/);
    await assertNothingStored(clean);
  });

  test('images over the pixel cap are refused with 400 (PNG header; JPEG frame header behind 150 KB of EXIF), nothing stored', async () => {
    const png = Buffer.alloc(4096);
    media['image/png'].copy(png, 0, 0, 33);
    png.writeUInt32BE(20_000, 16);
    png.writeUInt32BE(20_000, 20);
    const app1 = Buffer.alloc(60_004, 0);
    app1.writeUInt16BE(0xffe1, 0);
    app1.writeUInt16BE(60_002, 2);
    const sof = Buffer.from([0xff, 0xc0, 0, 17, 8, 0x27, 0x10, 0x27, 0x10, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]); // 10000×10000
    const jpeg = Buffer.concat([Buffer.from([0xff, 0xd8]), app1, app1, app1, sof, Buffer.alloc(1000)]);
    for (const [bytes, mime, name] of [
      [png, 'image/png', 'bomb.png'],
      [jpeg, 'image/jpeg', 'bomb.jpg'],
    ] as const) {
      const r = await upload(clean, [
        ['project_id', clean.projectId],
        ['file', new Blob([bytes], { type: mime }), name],
      ]);
      assert.equal(r.status, 400, name);
      assert.equal(r.body.error!.code, 'invalid_request');
      assert.match(r.body.error!.message, /Mpx\); the limit is 40\.0 Mpx/, name);
    }
    await assertNothingStored(clean);
  });

  test('a project of another workspace, or none at all, is 403 forbidden, before or after the file', async () => {
    for (const [pid, first] of [
      [owner.projectId, true],
      [owner.projectId, false],
      ['prj_doesnotexist', true],
      ['prj_doesnotexist', false],
    ] as const) {
      const file: [string, Blob, string] = ['file', new Blob([media['image/jpeg']], { type: 'image/jpeg' }), 'a.jpg'];
      const r = await upload(clean, first ? [['project_id', pid], file] : [file, ['project_id', pid]]);
      assert.equal(r.status, 403, `${pid} first=${first}`);
      assert.equal(r.body.error!.code, 'forbidden');
    }
    await assertNothingStored(clean);
  });

  test('missing parts, extra files, unknown fields and wrong content types are 400', async () => {
    const jpeg = () => new Blob([media['image/jpeg']], { type: 'image/jpeg' });
    const cases: Array<[string, Array<[string, string | Blob, string?]>, RegExp]> = [
      ['no file', [['project_id', clean.projectId]], /missing the "file" part/],
      ['no project_id', [['file', jpeg(), 'a.jpg']], /missing the "project_id" part/],
      [
        'two files',
        [
          ['project_id', clean.projectId],
          ['file', jpeg(), 'a.jpg'],
          ['file', jpeg(), 'b.jpg'],
        ],
        /only one file/,
      ],
      [
        'file under another name',
        [
          ['project_id', clean.projectId],
          ['image', jpeg(), 'a.jpg'],
        ],
        /unexpected file part/,
      ],
      [
        'unknown field',
        [
          ['project_id', clean.projectId],
          ['color', 'blue'],
          ['file', jpeg(), 'a.jpg'],
        ],
        /unexpected field/,
      ],
      [
        'file as a text field',
        [
          ['project_id', clean.projectId],
          ['file', 'not a file'],
        ],
        /must be a file/,
      ],
      [
        'duplicate project_id',
        [
          ['project_id', clean.projectId],
          ['project_id', clean.projectId],
          ['file', jpeg(), 'a.jpg'],
        ],
        /more than once/,
      ],
    ];
    for (const [why, parts, message] of cases) {
      const r = await upload(clean, parts);
      assert.equal(r.status, 400, why);
      assert.equal(r.body.error!.code, 'invalid_request', why);
      assert.match(r.body.error!.message, message, why);
    }
    for (const [contentType, body] of [
      ['application/json', JSON.stringify({ project_id: clean.projectId })],
      ['multipart/form-data', 'no boundary'],
      ['multipart/form-data; boundary=zzz', 'garbage without parts'],
    ] as const) {
      const res = await fetch(`${base}/v1/upload`, { method: 'POST', headers: { authorization: `Bearer ${clean.apiKey}`, 'content-type': contentType }, body });
      assert.equal(res.status, 400, contentType);
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'invalid_request');
    }
    await assertNothingStored(clean);
  });

  test('without a key the answer is 401', async () => {
    const form = new FormData();
    form.append('project_id', owner.projectId);
    const res = await fetch(`${base}/v1/upload`, { method: 'POST', body: form });
    assert.equal(res.status, 401);
  });
});
