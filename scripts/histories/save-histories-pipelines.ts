// The saved histories of customer pipelines (the pipelineRun parent workflow, workflows/pipeline-run.ts)
// and of a job recorded through the payload codec, for scripts/histories/save-histories.ts. Each group runs on
// a database and task queues of its own; `node dist/scripts/histories/save-histories.js pipeline encrypted`
// re-saves these alone.
import { createTenant, waitFor, type Tenant } from '../../test/support/stack.js';
import { api } from '../../test/support/services.js';
import { imageStep, videoStep } from '../../test/support/pipeline-steps.js';
import { testCodecKeys } from '../../test/support/codec.js';
import { create, finish, group, imageBody, save, type Group } from './save-histories-support.js';

/** Creates a pipeline over HTTP, waits for it to end as `expect`, and saves its parent workflow's history. */
async function pipeline(g: Group, t: Tenant, name: 'pipeline-completed' | 'pipeline-step-failed', steps: unknown[], expect: string): Promise<void> {
  const client = api(g.gw.baseUrl, t.apiKey);
  const created = await client.post('/v1/pipelines', { project_id: t.projectId, steps });
  if (created.status !== 200) throw new Error(`POST /v1/pipelines answered ${created.status}: ${created.text}`);
  const id = created.body.data.id as string;
  const ended = await waitFor(
    `pipeline ${id} to end`,
    async () => {
      const r = await client.get(`/v1/pipelines/${id}`);
      return r.body.data?.status === 'completed' || r.body.data?.status === 'failed' ? (r.body.data as { status: string; error: unknown }) : undefined;
    },
    180_000,
    200,
  );
  if (ended.status !== expect) throw new Error(`${name}: pipeline ${id} ended ${ended.status} (${JSON.stringify(ended.error)}), expected ${expect}`);
  // The parent workflow's id is the pipeline's.
  await save(name, g.gw.client.workflow.getHandle(id));
}

// The payload codec off: these histories are clear text like the generation ones, readable in a diff.
const codecOff = { PAYLOAD_CODEC_KEYS: '', PAYLOAD_CODEC_KEYS_FILE: '', PAYLOAD_CODEC_KEY_ID: '' };

export async function savePipelineAndEncryptedHistories(): Promise<void> {
  await group('customer pipelines (the local renderer)', { ...codecOff, LOCAL_RENDER_FAULTS: 'true' }, async (g) => {
    const t = await createTenant(g.tdb.db, 10_000);
    await pipeline(g, t, 'pipeline-completed', [imageStep('a lighthouse for the replay suite'), videoStep('a slow pan over it')], 'completed');
    await pipeline(
      g,
      t,
      'pipeline-step-failed',
      [imageStep('a lighthouse, then a refused clip'), videoStep('a pan the renderer refuses [fail:terminal]')],
      'failed',
    );
  });

  // The test profile's codec key, whatever the environment names: the replay suite opens this
  // history with that key (test/support/codec.ts testDataConverter).
  await group('an encrypted job (the payload codec on)', { ...testCodecKeys, PAYLOAD_CODEC_KEYS_FILE: '' }, async (g) => {
    const t = await createTenant(g.tdb.db, 10_000);
    await finish(g, 'image-encrypted', await create(g, t, '/v1/images/generate', imageBody('a sealed fox in snow')), 'completed');
  });
}
