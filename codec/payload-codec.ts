// AES-256-GCM payload codec: every payload a client or worker hands to Temporal leaves the process
// sealed, so the server's history, its persistence and anything reading them see no customer text.
//
// The layout follows the Temporal samples' encryption codec (samples-go encryption/, whose
// data_converter.go and crypt.go the TypeScript and Python samples interoperate with): metadata
// `encoding: binary/encrypted` and `encryption-key-id: <id>`; data = 12-byte nonce ‖ ciphertext ‖
// 16-byte tag, the plaintext being the whole original Payload protobuf-encoded (metadata included).
// Decoding picks the key by the id in the metadata, so a key rotation keeps old payloads readable.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, ValueError, type Payload, type PayloadCodec } from '@temporalio/common';
import protos from '@temporalio/proto';
import { loadCodecKeys, type CodecKeys, type CodecKeySettings } from './keys.js';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const METADATA_KEY_ID = 'encryption-key-id';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

// CommonJS module: its namespaces come through the default export under ESM (as in worker/workers.ts).
const ProtoPayload = protos.temporal.api.common.v1.Payload;
const text = (bytes: Uint8Array | null | undefined) => (bytes ? Buffer.from(bytes).toString('utf8') : undefined);

export class AesGcmPayloadCodec implements PayloadCodec {
  constructor(private readonly keys: CodecKeys) {}

  get activeKeyId(): string {
    return this.keys.activeId;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.seal(p));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.open(p));
  }

  seal(payload: Payload): Payload {
    const id = this.keys.activeId;
    const key = this.keys.keys.get(id)!;
    // A fresh random nonce per payload: GCM must never see a (key, nonce) pair twice.
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, nonce);
    const plain = ProtoPayload.encode(payload).finish();
    const sealed = Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return { metadata: { [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING), [METADATA_KEY_ID]: Buffer.from(id) }, data: sealed };
  }

  /** Payloads not sealed by this codec (another encoding) pass through unchanged. */
  open(payload: Payload): Payload {
    if (text(payload.metadata?.[METADATA_ENCODING_KEY]) !== ENCRYPTED_ENCODING) return payload;
    const id = text(payload.metadata?.[METADATA_KEY_ID]);
    if (!id) throw new ValueError('encrypted payload without an encryption-key-id');
    const key = this.keys.keys.get(id);
    if (!key) throw new ValueError(`encrypted payload under unknown key id ${JSON.stringify(id)}: add that key to PAYLOAD_CODEC_KEYS`);
    const data = Buffer.from(payload.data ?? new Uint8Array());
    if (data.length < NONCE_BYTES + TAG_BYTES) throw new ValueError(`encrypted payload under key ${id} is truncated`);
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, NONCE_BYTES));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(data.subarray(NONCE_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      // GCM's tag check: a flipped bit, a wrong key under the right id, or a truncated payload.
      throw new ValueError(`encrypted payload under key ${id} failed authentication (tampered, or the key with that id changed)`);
    }
    const inner = ProtoPayload.decode(plain);
    return { metadata: inner.metadata ?? {}, data: inner.data ?? new Uint8Array() };
  }
}

/** The codec for the configured keys, or null when payload encryption is off. */
export function payloadCodecFrom(settings: CodecKeySettings): AesGcmPayloadCodec | null {
  const keys = loadCodecKeys(settings);
  return keys ? new AesGcmPayloadCodec(keys) : null;
}

/**
 * The `dataConverter` option of a Temporal Client or Worker: the payload codec when keys are
 * configured, nothing otherwise.
 */
export function dataConverterOption(codec: PayloadCodec | null): { dataConverter?: { payloadCodecs: PayloadCodec[] } } {
  return codec ? { dataConverter: { payloadCodecs: [codec] } } : {};
}

/** The dataConverter spread for a client or worker built from the process's settings. */
export function codecDataConverter(settings: CodecKeySettings): { dataConverter?: { payloadCodecs: PayloadCodec[] } } {
  return dataConverterOption(payloadCodecFrom(settings));
}
