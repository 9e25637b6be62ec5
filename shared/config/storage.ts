// Object storage (any S3-compatible server): inputs, uploads and job outputs.
import { z } from 'zod';
import { bool, int, optionalInt, optionalString, optionalUrl, url } from './env-types.js';

export const storageEnv = {
  S3_ENDPOINT: url.describe('S3 API endpoint the processes talk to (required).'),
  S3_ACCESS_KEY: optionalString.describe(
    'S3 access key. Set together with S3_SECRET_KEY (MinIO, any S3-compatible server); both unset: credentials come from the AWS chain (the AWS_* variables below).',
  ),
  S3_SECRET_KEY: optionalString
    .meta({ valueType: 'string (secret)' })
    .describe('S3 secret key, set together with S3_ACCESS_KEY. Also the default key of the unguessable job media prefixes (S3_MEDIA_PREFIX_SECRET).'),
  S3_MEDIA_PREFIX_SECRET: optionalString
    .meta({ valueType: 'string (secret)' })
    .describe(
      "Key of the unguessable token in each job's media prefix (`jobs/<job id>/<token>/`). Unset: S3_SECRET_KEY; required when the credentials come from the AWS chain. Every process must use the same value: a retried activity finds its own outputs by it.",
    ),
  S3_BUCKET: z.string().min(3).default('media').meta({ valueType: 'string' }).describe('Bucket holding uploads and job outputs.'),
  S3_REGION: z
    .string()
    .default('us-east-1')
    .meta({ valueType: 'string' })
    .describe("Region the S3 requests are signed for (the bucket's region on AWS, e.g. `eu-west-1`); given, no bucket-location request is ever made."),
  S3_PATH_STYLE: bool(true).describe(
    'Path-style addressing (`<endpoint>/<bucket>/<key>`), as MinIO serves. `false`: virtual-hosted (`<bucket>.<endpoint host>/<key>`), as S3 on AWS expects with S3_ENDPOINT `https://s3.<region>.amazonaws.com`; a bucket name with dots stays path-style over HTTPS (its certificate cannot match).',
  ),
  AWS_ACCESS_KEY_ID: optionalString.describe(
    'AWS credential chain, first link (read only when S3_ACCESS_KEY is unset): a static access key, with AWS_SECRET_ACCESS_KEY.',
  ),
  AWS_SECRET_ACCESS_KEY: optionalString.meta({ valueType: 'string (secret)' }).describe('AWS credential chain: the secret key of AWS_ACCESS_KEY_ID.'),
  AWS_SESSION_TOKEN: optionalString.meta({ valueType: 'string (secret)' }).describe('AWS credential chain: the session token of temporary AWS_* keys.'),
  AWS_WEB_IDENTITY_TOKEN_FILE: optionalString.describe(
    'AWS credential chain, second link: a web identity token file (Kubernetes IRSA sets it), exchanged with AWS_ROLE_ARN at STS (AssumeRoleWithWebIdentity) for temporary credentials (one-hour sessions), renewed 5 minutes before they expire, or earlier so that they outlive a URL presigned with them (PRESIGN_EXPIRY_SECONDS + 1 minute, at most half a session); the file is read again at each renewal.',
  ),
  AWS_ROLE_ARN: optionalString.describe('AWS credential chain: the IAM role assumed with the web identity token.'),
  AWS_ROLE_SESSION_NAME: optionalString.describe('AWS credential chain: the role session name (CloudTrail shows it). Unset: `mediagen-<pid>-<time>`.'),
  AWS_REGION: optionalString.describe('AWS credential chain: the region of the STS endpoint (`https://sts.<region>.amazonaws.com`). Unset: S3_REGION.'),
  AWS_ENDPOINT_URL_STS: optionalUrl().describe('AWS credential chain: another STS endpoint (a VPC endpoint, or a test double), as the AWS SDKs read it.'),
  AWS_EC2_METADATA_SERVICE_ENDPOINT: optionalUrl().describe(
    'AWS credential chain, last link: the instance metadata service (default `http://169.254.169.254`), used when neither static keys nor a web identity are configured and no container credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI, read by minio-js itself) is set.',
  ),
  S3_PUBLIC_BASE_URL: optionalUrl().describe('Public base URL of the bucket, when objects are served from it directly rather than through presigned URLs.'),
  // A signature covers the host, so presigned URLs must be signed for the host clients reach.
  S3_PRESIGN_ENDPOINT: optionalUrl().describe(
    'The S3 endpoint clients reach (a CDN or public hostname in front of S3_ENDPOINT): presigned URLs are signed for it, since a signature covers the host. Unset: S3_ENDPOINT.',
  ),
  PRESIGN_EXPIRY_SECONDS: int(900, 60, 7 * 24 * 3600).describe('Lifetime of the presigned download URLs the API hands out.'),
  OUTPUT_RETENTION_DAYS: optionalInt(1, 36_500).describe(
    'Job outputs (everything under `jobs/`) expire this many days after they were stored, by a bucket lifecycle rule a worker running the reconciler role applies at start (shared/retention.ts; only its storage identity may set one). Unset: kept until deleted.',
  ),
};

/** S3 keys come in pairs, and keys from the AWS chain need their own media-prefix secret. */
export function storageCredentialsProblem(c: {
  S3_ACCESS_KEY?: string | undefined;
  S3_SECRET_KEY?: string | undefined;
  S3_MEDIA_PREFIX_SECRET?: string | undefined;
}) {
  if (Boolean(c.S3_ACCESS_KEY) !== Boolean(c.S3_SECRET_KEY)) return 'S3_ACCESS_KEY / S3_SECRET_KEY: set both, or neither (credentials from the AWS chain)';
  if (!c.S3_SECRET_KEY && !c.S3_MEDIA_PREFIX_SECRET) return 'S3_MEDIA_PREFIX_SECRET: required when the S3 credentials come from the AWS chain';
  return undefined;
}
