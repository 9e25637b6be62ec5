// The AES-256-GCM payload codec (codec/payload-codec.ts) and its keys (codec/keys.ts): what it seals
// carries no clear text, opens under the key its metadata names (so a rotation keeps old payloads
// readable), refuses a tampered payload and an unknown key id by name, and a bad key configuration
// stops a process at start without printing key material.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { AesGcmPayloadCodec, ENCRYPTED_ENCODING, METADATA_KEY_ID, payloadCodecFrom } from '../../codec/payload-codec.js';
import { CodecKeyError, loadCodecKeys } from '../../codec/keys.js';

const keyA = randomBytes(32).toString('base64');
const keyB = randomBytes(32).toString('base64');
const secret = 'a lighthouse at dusk, painted by the customer 7f3a';
const plain = (): Payload => defaultPayloadConverter.toPayload({ prompt: secret, webhook: 'https://hooks.example.com/x' });
const str = (b: Uint8Array | undefined | null) => Buffer.from(b ?? new Uint8Array()).toString('utf8');
const codecOf = (keys: string, id: string) => payloadCodecFrom({ PAYLOAD_CODEC_KEYS: keys, PAYLOAD_CODEC_KEY_ID: id })!;

test('a sealed payload holds no clear text, names its key id, and opens to the original payload', async () => {
  const codec = codecOf(`a:${keyA}`, 'a');
  const original = plain();
  const [sealed] = await codec.encode([original]);
  assert.equal(str(sealed!.metadata!.encoding), ENCRYPTED_ENCODING);
  assert.equal(str(sealed!.metadata![METADATA_KEY_ID]), 'a');
  assert.deepEqual(Object.keys(sealed!.metadata!).sort(), ['encoding', METADATA_KEY_ID].sort(), 'the original metadata (json/plain) is inside, not beside');
  const wire = Buffer.from(JSON.stringify(sealed)).toString('utf8') + str(sealed!.data);
  assert.ok(!wire.includes('lighthouse') && !wire.includes('json/plain') && !wire.includes('hooks.example.com'));
  const [opened] = await codec.decode([sealed!]);
  assert.equal(str(opened!.metadata!.encoding), 'json/plain');
  assert.deepEqual(defaultPayloadConverter.fromPayload(opened!), { prompt: secret, webhook: 'https://hooks.example.com/x' });
});

test('every payload gets a fresh nonce: the same value seals to different bytes', async () => {
  const codec = codecOf(`a:${keyA}`, 'a');
  const [x, y] = await codec.encode([plain(), plain()]);
  assert.notDeepEqual(Buffer.from(x!.data!), Buffer.from(y!.data!));
  assert.notDeepEqual(Buffer.from(x!.data!).subarray(0, 12), Buffer.from(y!.data!).subarray(0, 12));
});

test('rotation: with keys a,b active b, a payload sealed under a still opens and new ones are sealed under b', async () => {
  const before = codecOf(`a:${keyA}`, 'a');
  const [old] = await before.encode([plain()]);
  const after = codecOf(`a:${keyA},b:${keyB}`, 'b');
  const [opened] = await after.decode([old!]);
  assert.equal((defaultPayloadConverter.fromPayload(opened!) as { prompt: string }).prompt, secret);
  const [fresh] = await after.encode([plain()]);
  assert.equal(str(fresh!.metadata![METADATA_KEY_ID]), 'b');
  // The process that only knows a cannot open b's payloads, and says which key it lacks.
  await assert.rejects(before.decode([fresh!]), (err: Error) => {
    assert.match(err.message, /unknown key id "b"/);
    assert.ok(!err.message.includes(keyA) && !err.message.includes(keyB));
    return true;
  });
});

test('a tampered payload, or one under a changed key with the same id, fails authentication', async () => {
  const codec = codecOf(`a:${keyA}`, 'a');
  const [sealed] = await codec.encode([plain()]);
  const flipped = Buffer.from(sealed!.data!);
  flipped[20]! ^= 0x01;
  await assert.rejects(codec.decode([{ ...sealed!, data: flipped }]), /key a failed authentication/);
  await assert.rejects(codec.decode([{ ...sealed!, data: Buffer.from(sealed!.data!).subarray(0, 20) }]), /key a (is truncated|failed authentication)/);
  await assert.rejects(codecOf(`a:${keyB}`, 'a').decode([sealed!]), /failed authentication/);
});

test('payloads of other encodings pass through decode untouched', async () => {
  const codec = codecOf(`a:${keyA}`, 'a');
  const p = plain();
  assert.deepEqual(await codec.decode([p]), [p]);
});

test('key configuration is validated at start and never echoes key material', async () => {
  const never = (fn: () => unknown, re: RegExp) =>
    assert.throws(fn, (err: Error) => {
      assert.ok(err instanceof CodecKeyError, err.message);
      assert.match(err.message, re);
      assert.ok(!err.message.includes(keyA), 'no key material in the message');
      return true;
    });
  assert.equal(loadCodecKeys({}), null, 'no keys: encryption off');
  never(() => loadCodecKeys({ PAYLOAD_CODEC_KEYS: `a:${keyA}` }), /PAYLOAD_CODEC_KEY_ID must name/);
  never(() => loadCodecKeys({ PAYLOAD_CODEC_KEYS: `a:${keyA}`, PAYLOAD_CODEC_KEY_ID: 'b' }), /no key with id b/);
  never(() => loadCodecKeys({ PAYLOAD_CODEC_KEYS: `a:${randomBytes(16).toString('base64')}`, PAYLOAD_CODEC_KEY_ID: 'a' }), /key a must be 32 bytes/);
  never(() => loadCodecKeys({ PAYLOAD_CODEC_KEYS: keyA, PAYLOAD_CODEC_KEY_ID: 'a' }), /id:base64-key/);
  never(() => loadCodecKeys({ PAYLOAD_CODEC_KEYS: `a:${keyA},a:${keyA}`, PAYLOAD_CODEC_KEY_ID: 'a' }), /appears twice/);
  never(() => loadCodecKeys({ PAYLOAD_CODEC_KEY_ID: 'a' }), /no key is/);
  const dir = await mkdtemp(join(tmpdir(), 'codec-keys-'));
  try {
    const file = join(dir, 'keys');
    await writeFile(file, `# rotated 2026-11\na:${keyA}\nb:${keyB}\n`);
    const keys = loadCodecKeys({ PAYLOAD_CODEC_KEYS_FILE: file, PAYLOAD_CODEC_KEY_ID: 'b' });
    assert.deepEqual([...keys!.keys.keys()], ['a', 'b']);
    never(() => loadCodecKeys({ PAYLOAD_CODEC_KEYS_FILE: join(dir, 'missing'), PAYLOAD_CODEC_KEY_ID: 'a' }), /PAYLOAD_CODEC_KEYS_FILE: cannot read/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  assert.ok(new AesGcmPayloadCodec(loadCodecKeys({ PAYLOAD_CODEC_KEYS: `a:${keyA}`, PAYLOAD_CODEC_KEY_ID: 'a' })!).activeKeyId === 'a');
});
