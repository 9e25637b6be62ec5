// The test profile's payload codec: every suite's gateway and workers (testConfig) seal payloads
// unless the environment names its own keys, so the whole suite runs through the codec the
// production processes use. The key is a fixed test fixture (derived from a label), not a secret.
import { createHash } from 'node:crypto';
import type { PayloadCodec } from '@temporalio/common';
import { dataConverterOption, payloadCodecFrom } from '../../codec/payload-codec.js';

export const TEST_CODEC_KEY_ID = 'test-1';

/** A 32-byte key in base64 derived from a label: the same for every test run and process. */
export const testKey = (label: string) => createHash('sha256').update(`media-gen test payload codec: ${label}`).digest('base64');

export const testCodecKeys = { PAYLOAD_CODEC_KEYS: `${TEST_CODEC_KEY_ID}:${testKey(TEST_CODEC_KEY_ID)}`, PAYLOAD_CODEC_KEY_ID: TEST_CODEC_KEY_ID };

/** The environment's keys when it sets any, else the test key (then put into this process's environment too). */
export function testCodecSettings(env: NodeJS.ProcessEnv = process.env): {
  PAYLOAD_CODEC_KEYS?: string;
  PAYLOAD_CODEC_KEYS_FILE?: string;
  PAYLOAD_CODEC_KEY_ID?: string;
} {
  // Spawned gateway and worker processes (`...process.env`) then use the same key as in-process ones.
  if (env === process.env && !env.PAYLOAD_CODEC_KEYS && !env.PAYLOAD_CODEC_KEYS_FILE) Object.assign(process.env, testCodecKeys);
  if (env.PAYLOAD_CODEC_KEYS || env.PAYLOAD_CODEC_KEYS_FILE) {
    return { PAYLOAD_CODEC_KEYS: env.PAYLOAD_CODEC_KEYS, PAYLOAD_CODEC_KEYS_FILE: env.PAYLOAD_CODEC_KEYS_FILE, PAYLOAD_CODEC_KEY_ID: env.PAYLOAD_CODEC_KEY_ID };
  }
  return testCodecKeys;
}

/** The `dataConverter` of a client or worker a test builds itself beside the suite's processes. */
export function testDataConverter(env: NodeJS.ProcessEnv = process.env): { dataConverter?: { payloadCodecs: PayloadCodec[] } } {
  return dataConverterOption(payloadCodecFrom(testCodecSettings(env)));
}

/** The codec itself: the environment's keys, else the test key (payloads a test reads raw). */
export function testCodec(env: NodeJS.ProcessEnv = process.env): PayloadCodec {
  return payloadCodecFrom(testCodecSettings(env))!;
}
