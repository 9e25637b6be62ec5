// fal.ai's queue API: the primary route of most models (providers/fal/adapter.ts).
import { defineProvider } from '../define.js';

export const fal = defineProvider({
  name: 'fal',
  keys: ['FAL_KEY'],
  config: ({ optionalString, bool, url }) => ({
    FAL_KEY: optionalString.describe("fal.ai's API key: fal's routes are live only with it."),
    FAL_QUEUE_URL: url.default('https://queue.fal.run').describe("fal's queue API origin."),
    FAL_API_URL: url
      .default('https://api.fal.ai')
      .describe("fal's Platform API origin (its model search, GET /v1/models?endpoint_id=…, is the route health probe's); a trailing /v1 is dropped."),
    FAL_CDN_REQUIRES_KEY: bool(false).describe("Accounts whose fal CDN serves outputs only with the key (the key goes to fal's CDN v3 hosts only)."),
  }),
  /**
   * fal's CDN, the only place its output files are fetched from. fal's docs ("fal CDN", "Media
   * expiration") show generated files on https://v3.fal.media/files/…, and "File access controls" puts
   * the CDN v3 objects, the only ones an ACL can make private, on https://v3b.fal.media/…; model
   * outputs of older endpoints carry https://fal.media/files/… (and v2.fal.media). Live answers also
   * carry https://v3c.fal.media/files/… (a third CDN v3 shard) and objects of fal's own Cloud Storage
   * bucket, https://storage.googleapis.com/falserverless/…: that host is Google's, shared by every
   * bucket, so only the falserverless path is allowed on it. Its "private" files are read with the
   * key, which therefore goes to the two CDN v3 hosts the access-control docs name only.
   */
  outputHosts: {
    hosts: ['v3.fal.media', 'v3b.fal.media', 'v3c.fal.media', 'fal.media', 'v2.fal.media', 'storage.googleapis.com/falserverless/'],
    keyHosts: ['v3.fal.media', 'v3b.fal.media'],
  },
  // PUT …/requests/{id}/cancel: 202 CANCELLATION_REQUESTED while IN_QUEUE.
  cancel: 'queued',
});
