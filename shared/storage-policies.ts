// The object-store rights of each fleet, as S3 bucket policies (IAM policy documents: MinIO's
// canned policies, an AWS IAM role's inline policy). Three identities:
//
// Everyone reads the catalog's media (`catalog/`, written by `admin seed` as the owner); nobody writes it.
// - gateway: reads what it serves (`uploads/`, `jobs/` outputs; presigned GETs are signed with
//   its keys, so they need GetObject), writes only uploads (`uploads/`, multipart bodies; `incoming/`,
//   the target of the presigned POSTs it signs, copied to `uploads/` on completion) and deletes
//   only what a customer may delete (an upload, a job's outputs). Nothing of the bucket's own
//   configuration: no lifecycle, no policy.
// - worker (workflows, io, fetch, provider, webhooks): job media (`jobs/`) and uploads (inputs, and
//   those fetched from a URL), read, write, delete. No bucket configuration either.
// - reconciler: the worker's rights, the sweep of never-completed direct uploads (`incoming/`), and
//   the bucket lifecycle rules (shared/retention.ts), which only it applies (worker/service.ts).
//
// Listing the bucket (and HeadBucket, the health check) is s3:ListBucket for all three. Every
// process must share S3_MEDIA_PREFIX_SECRET once their secret keys differ (shared/storage.ts).
export const storageIdentities = ['gateway', 'worker', 'reconciler'] as const;
export type StorageIdentity = (typeof storageIdentities)[number];

/** The storage identity a worker process with these roles needs (the reconciler's when it runs it). */
export function storageIdentityOfRoles(roles: readonly string[]): StorageIdentity {
  return roles.includes('reconciler') ? 'reconciler' : 'worker';
}

interface PolicyDocument {
  Version: '2012-10-17';
  Statement: Array<{ Effect: 'Allow'; Action: string[]; Resource: string[] }>;
}

const MULTIPART = ['s3:AbortMultipartUpload', 's3:ListMultipartUploadParts'];

export function storagePolicy(identity: StorageIdentity, bucket: string): PolicyDocument {
  const arn = (path: string) => `arn:aws:s3:::${bucket}/${path}`;
  const bucketWide = { Effect: 'Allow' as const, Action: ['s3:ListBucket', 's3:GetBucketLocation'], Resource: [`arn:aws:s3:::${bucket}`] };
  if (identity === 'gateway') {
    return {
      Version: '2012-10-17',
      Statement: [
        bucketWide,
        { Effect: 'Allow', Action: ['s3:GetObject'], Resource: [arn('uploads/*'), arn('incoming/*'), arn('jobs/*'), arn('catalog/*')] },
        { Effect: 'Allow', Action: ['s3:PutObject', ...MULTIPART], Resource: [arn('uploads/*'), arn('incoming/*')] },
        { Effect: 'Allow', Action: ['s3:DeleteObject'], Resource: [arn('uploads/*'), arn('incoming/*'), arn('jobs/*')] },
      ],
    };
  }
  const objectActions = ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', ...MULTIPART];
  // The catalog's media (actor references and previews, voice samples) is the seed's: read-only.
  const catalog = { Effect: 'Allow' as const, Action: ['s3:GetObject'], Resource: [arn('catalog/*')] };
  if (identity === 'worker')
    return { Version: '2012-10-17', Statement: [bucketWide, catalog, { Effect: 'Allow', Action: objectActions, Resource: [arn('jobs/*'), arn('uploads/*')] }] };
  return {
    Version: '2012-10-17',
    Statement: [
      { ...bucketWide, Action: [...bucketWide.Action, 's3:ListBucketMultipartUploads', 's3:GetLifecycleConfiguration', 's3:PutLifecycleConfiguration'] },
      catalog,
      { Effect: 'Allow', Action: objectActions, Resource: [arn('jobs/*'), arn('uploads/*'), arn('incoming/*')] },
    ],
  };
}
