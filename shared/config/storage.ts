// Object storage (any S3-compatible server): inputs, uploads and job outputs.
import { z } from 'zod';
import { int, optionalInt, optionalUrl, url } from './env-types.js';

export const storageEnv = {
  S3_ENDPOINT: url.describe('S3 API endpoint the processes talk to (required).'),
  S3_ACCESS_KEY: z.string().min(1).meta({ valueType: 'string' }).describe('S3 access key (required).'),
  S3_SECRET_KEY: z.string().min(1).meta({ valueType: 'string (secret)' }).describe('S3 secret key (required).'),
  S3_BUCKET: z.string().min(3).default('media').meta({ valueType: 'string' }).describe('Bucket holding uploads and job outputs.'),
  S3_REGION: z.string().default('us-east-1').meta({ valueType: 'string' }).describe('Region the S3 requests are signed for.'),
  S3_PUBLIC_BASE_URL: optionalUrl().describe('Public base URL of the bucket, when objects are served from it directly rather than through presigned URLs.'),
  // A signature covers the host, so presigned URLs must be signed for the host clients reach.
  S3_PRESIGN_ENDPOINT: optionalUrl().describe(
    'The S3 endpoint clients reach (a CDN or public hostname in front of S3_ENDPOINT): presigned URLs are signed for it, since a signature covers the host. Unset: S3_ENDPOINT.',
  ),
  PRESIGN_EXPIRY_SECONDS: int(900, 60, 7 * 24 * 3600).describe('Lifetime of the presigned download URLs the API hands out.'),
  OUTPUT_RETENTION_DAYS: optionalInt(1, 36_500).describe(
    'Job outputs (everything under `jobs/`) expire this many days after they were stored, by a bucket lifecycle rule the worker applies at start (shared/retention.ts). Unset: kept until deleted.',
  ),
};
