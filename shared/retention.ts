// Retention of stored media. Two bucket lifecycle rules, applied idempotently at worker start (and
// by scripts/stack.sh through the same function): incomplete multipart uploads are aborted a day
// after they began (a gateway that died mid-upload leaves none behind), and, when
// OUTPUT_RETENTION_DAYS is set, job media (the `jobs/` prefix) expires that many days after it was
// stored. Rules of ours are replaced by ID; any other rule of the bucket is kept as it is.
// Deleting one job's outputs on request (DELETE /v1/{kind}/{id}): api/routes/retention.ts.
import type { Client as MinioClient, LifecycleRule } from 'minio';

export const ABORT_MULTIPART_RULE_ID = 'mediagen-abort-incomplete-multipart';
export const OUTPUT_EXPIRY_RULE_ID = 'mediagen-expire-job-outputs';
const OUR_RULES = new Set([ABORT_MULTIPART_RULE_ID, OUTPUT_EXPIRY_RULE_ID]);

/** The lifecycle rules of ours for a retention setting (null: outputs kept until deleted). */
function lifecycleRules(outputRetentionDays: number | null, abortIncompleteUploads = true): LifecycleRule[] {
  const rules: LifecycleRule[] = [];
  if (abortIncompleteUploads) {
    rules.push({ ID: ABORT_MULTIPART_RULE_ID, Status: 'Enabled', Filter: { Prefix: '' }, AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } });
  }
  if (outputRetentionDays !== null) {
    rules.push({ ID: OUTPUT_EXPIRY_RULE_ID, Status: 'Enabled', Filter: { Prefix: 'jobs/' }, Expiration: { Days: outputRetentionDays } });
  }
  return rules;
}

/** The bucket's lifecycle rules as stored (empty when it has none). */
export async function readLifecycleRules(client: MinioClient, bucket: string): Promise<LifecycleRule[]> {
  try {
    const config = await client.getBucketLifecycle(bucket);
    const rules = (config as { Rule?: LifecycleRule | LifecycleRule[] } | null)?.Rule;
    return rules === undefined ? [] : Array.isArray(rules) ? rules : [rules];
  } catch (err) {
    if ((err as { code?: string }).code === 'NoSuchLifecycleConfiguration') return [];
    throw err;
  }
}

export interface LifecycleResult {
  changed: boolean;
  /**
   * Whether the bucket holds the abort-incomplete-multipart rule. MinIO refuses that action in a
   * lifecycle configuration (MalformedXML, checked against the real server in
   * test/e2e/retention.test.ts): it aborts stale multipart uploads itself after
   * MINIO_API_STALE_UPLOADS_EXPIRY (24 h by default, set explicitly in docker-compose.yml). AWS S3 and
   * other stores take the rule.
   */
  abortRule: boolean;
}

/**
 * Makes the bucket's lifecycle hold our rules for this setting (others untouched). Writes only when
 * something differs, so every worker may call it at start.
 */
export async function applyLifecycleRules(client: MinioClient, bucket: string, outputRetentionDays: number | null): Promise<LifecycleResult> {
  const current = await readLifecycleRules(client, bucket);
  const others = current.filter((r) => !OUR_RULES.has(r.ID));
  const ours = (rules: LifecycleRule[]) =>
    JSON.stringify(
      rules
        .filter((r) => OUR_RULES.has(r.ID))
        .map(normalize)
        .sort((a, b) => a.id.localeCompare(b.id)),
    );
  for (const abortRule of [true, false]) {
    const wanted = [...others, ...lifecycleRules(outputRetentionDays, abortRule)];
    if (ours(current) === ours(wanted)) return { changed: false, abortRule };
    try {
      await client.setBucketLifecycle(bucket, wanted.length ? { Rule: wanted } : null);
      return { changed: true, abortRule };
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (!abortRule || (code !== 'MalformedXML' && code !== 'InvalidArgument' && code !== 'NotImplemented')) throw err;
      // The store does not take the abort action (MinIO): the rest of the rules without it.
    }
  }
  throw new Error('unreachable');
}

/** A rule as compared: what we set, with the XML parser's strings read as numbers. */
function normalize(r: LifecycleRule) {
  return {
    id: r.ID,
    status: r.Status,
    prefix: r.Filter?.Prefix ?? r.Prefix ?? '',
    abortDays: r.AbortIncompleteMultipartUpload ? Number(r.AbortIncompleteMultipartUpload.DaysAfterInitiation) : null,
    expireDays: r.Expiration?.Days !== undefined ? Number(r.Expiration.Days) : null,
  };
}

/**
 * Why a completed job's media is no longer served, or null while it is: deleted on request, or past
 * the retention the lifecycle rule enforces (the objects may linger until MinIO's scan removes them;
 * they are not handed out meanwhile).
 */
export function outputsGoneReason(
  job: { outputs_removed_at: Date | null; finished_at: Date | null; updated_at: Date },
  outputRetentionDays: number | null,
  now = Date.now(),
): string | null {
  if (job.outputs_removed_at) return 'its outputs were deleted';
  if (outputRetentionDays !== null) {
    const stored = (job.finished_at ?? job.updated_at).getTime();
    if (now - stored > outputRetentionDays * 86_400_000) return `its outputs expired after ${outputRetentionDays} days`;
  }
  return null;
}
