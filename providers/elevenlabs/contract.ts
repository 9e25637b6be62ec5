// ElevenLabs text-to-speech: the body of POST /v1/text-to-speech/{voice_id}. Source: elevenlabs-js
// (github.com/elevenlabs/elevenlabs-js) BodyTextToSpeechFull and VoiceSettings, whose wire form
// (serialization/…/BodyTextToSpeechFull.Raw, snake_case) activities/providers/sdk-types.ts checks this schema against
// at compile time with the pinned package; API reference elevenlabs.io/docs/api-reference/
// text-to-speech/convert. The query carries `output_format`, `enable_logging`,
// `optimize_streaming_latency`. Errors are `{ detail: { status, message } }` (422 validation:
// `{ detail: [{ loc, msg, type }] }`).
import { z } from 'zod';

/** Each setting is optional: a voice keeps its own stored tuning for every one left out. */
export const elevenLabsVoiceSettings = z.strictObject({
  stability: z.number().min(0).max(1).optional(),
  similarity_boost: z.number().min(0).max(1).optional(),
  style: z.number().min(0).max(1).optional(),
  use_speaker_boost: z.boolean().optional(),
  speed: z.number().min(0.7).max(1.2).optional(),
});

export const elevenLabsTextToSpeechBody = z.strictObject({
  text: z.string().min(1),
  model_id: z.string().optional(),
  language_code: z.string().optional(),
  voice_settings: elevenLabsVoiceSettings.optional(),
  pronunciation_dictionary_locators: z.array(z.strictObject({ pronunciation_dictionary_id: z.string(), version_id: z.string().optional() })).optional(),
  seed: z.number().int().optional(),
  previous_text: z.string().optional(),
  next_text: z.string().optional(),
  previous_request_ids: z.array(z.string()).optional(),
  next_request_ids: z.array(z.string()).optional(),
  apply_text_normalization: z.enum(['auto', 'on', 'off']).optional(),
  apply_language_text_normalization: z.boolean().optional(),
  use_pvc_as_ivc: z.boolean().optional(),
});

export type ElevenLabsTextToSpeechBody = z.input<typeof elevenLabsTextToSpeechBody>;
export type ElevenLabsVoiceSettings = z.input<typeof elevenLabsVoiceSettings>;
