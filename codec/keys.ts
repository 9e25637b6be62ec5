// The payload codec's keys: parsed and validated once at start, so a process with a malformed key,
// a key of the wrong length or an active id that names no key refuses to start. Errors name the
// variable and the key id, never key material.
import { readFileSync } from 'node:fs';

export interface CodecKeys {
  /** The id new payloads are sealed under. */
  activeId: string;
  keys: ReadonlyMap<string, Buffer>;
}

export class CodecKeyError extends Error {
  override name = 'CodecKeyError';
}

export interface CodecKeySettings {
  PAYLOAD_CODEC_KEYS?: string | undefined;
  PAYLOAD_CODEC_KEYS_FILE?: string | undefined;
  PAYLOAD_CODEC_KEY_ID?: string | undefined;
}

const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** `id:base64,id2:base64` (commas or newlines between entries) into a map of 32-byte keys. */
function parseCodecKeys(raw: string, source: string): Map<string, Buffer> {
  const keys = new Map<string, Buffer>();
  for (const entry of raw.split(/[,\n]/).map((s) => s.trim())) {
    if (entry === '' || entry.startsWith('#')) continue;
    const colon = entry.indexOf(':');
    const id = colon > 0 ? entry.slice(0, colon).trim() : '';
    if (!KEY_ID.test(id)) throw new CodecKeyError(`${source}: every entry is id:base64-key with an id of letters, digits, "_", "-" and "." (1-64)`);
    const material = entry.slice(colon + 1).trim();
    const key = BASE64.test(material) ? Buffer.from(material, 'base64') : Buffer.alloc(0);
    if (key.length !== 32) throw new CodecKeyError(`${source}: key ${id} must be 32 bytes in base64 (AES-256)`);
    if (keys.has(id)) throw new CodecKeyError(`${source}: key ${id} appears twice`);
    keys.set(id, key);
  }
  return keys;
}

/** The configured keys, or null when payload encryption is off (no keys set). */
export function loadCodecKeys(settings: CodecKeySettings): CodecKeys | null {
  let raw = settings.PAYLOAD_CODEC_KEYS;
  let source = 'PAYLOAD_CODEC_KEYS';
  if (settings.PAYLOAD_CODEC_KEYS_FILE) {
    source = 'PAYLOAD_CODEC_KEYS_FILE';
    try {
      raw = readFileSync(settings.PAYLOAD_CODEC_KEYS_FILE, 'utf8');
    } catch (err) {
      throw new CodecKeyError(`${source}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  if (!raw || raw.trim() === '') {
    if (settings.PAYLOAD_CODEC_KEY_ID) throw new CodecKeyError('PAYLOAD_CODEC_KEY_ID is set but no key is (PAYLOAD_CODEC_KEYS or PAYLOAD_CODEC_KEYS_FILE)');
    return null;
  }
  const keys = parseCodecKeys(raw, source);
  if (keys.size === 0) throw new CodecKeyError(`${source}: holds no key`);
  const activeId = settings.PAYLOAD_CODEC_KEY_ID;
  if (!activeId) throw new CodecKeyError('PAYLOAD_CODEC_KEY_ID must name the key new payloads are sealed with');
  if (!keys.has(activeId)) throw new CodecKeyError(`PAYLOAD_CODEC_KEY_ID: no key with id ${activeId} in ${source}`);
  return { activeId, keys };
}
