// Payload encryption (codec/): the keys every Temporal client and worker seals payloads with, and
// the codec server that lets the Web UI and the `temporal` CLI show them decoded.
import { int, optionalString } from './env-types.js';

export const codecEnv = {
  PAYLOAD_CODEC_KEYS: optionalString
    .meta({ valueType: '`id:base64-32-bytes`, comma-separated' })
    .describe(
      'AES-256-GCM keys of the payload codec (codec/keys.ts), each a key id (letters, digits, `_`, `-`, `.`) and 32 random bytes in base64. Every payload a client or worker sends to Temporal is sealed with PAYLOAD_CODEC_KEY_ID; a payload is opened with the key its metadata names, so a rotation adds a key and keeps the old ones. Unset (and no PAYLOAD_CODEC_KEYS_FILE): payloads travel in clear text.',
    ),
  PAYLOAD_CODEC_KEYS_FILE: optionalString.describe(
    'A file holding PAYLOAD_CODEC_KEYS (same format, commas or newlines between keys), read at start; wins over PAYLOAD_CODEC_KEYS.',
  ),
  PAYLOAD_CODEC_KEY_ID: optionalString.describe('The key new payloads are sealed with; must be one of the keys. Required when keys are set.'),
  CODEC_SERVER_PORT: int(8088, 0, 65535).describe('Port of the codec server (`node dist/codec/server.js`) on HOST; 0 takes a free one (logged at start).'),
  CODEC_SERVER_TOKEN: optionalString.describe(
    "The codec server's operator token: `Authorization: Bearer <token>` (the `temporal` CLI's `--codec-auth`) or a login on its /login page (a session cookie the Web UI sends). Required by the codec server, at least 32 characters.",
  ),
  CODEC_SERVER_TOKEN_FILE: optionalString.describe('A file holding CODEC_SERVER_TOKEN; wins over CODEC_SERVER_TOKEN.'),
  CODEC_SERVER_CORS_ORIGINS: optionalString
    .meta({ valueType: 'comma-separated origins' })
    .describe('Origins (scheme://host:port) of the Web UI allowed to call the codec server from a browser. Unset: no browser origin is allowed.'),
};
