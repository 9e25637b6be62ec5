// `seed`: the actor and voice catalog (rows plus media rendered into object storage), and with
// --demo the demo workspace.
import { ConfigProblem, type Command } from '../command.js';
// The seed's modules (object storage client, media renderer) load only for `seed`, so every other
// command starts fast.
type SeedModule = typeof import('../seed.js');

export const seedCommands: Record<string, Command> = {
  seed: {
    usage: 'seed [--demo]',
    summary: 'seed the actor and voice catalog (media into object storage); --demo also the demo workspace',
    flags: { demo: { type: 'boolean', help: 'also ensure the demo workspace, project and a fresh demo key' } },
    async run(ctx, f) {
      const [{ envSchema }, { createStorage }, { seedCatalog, seedDemo }] = await Promise.all([
        import('../../shared/config.js'),
        import('../../shared/storage.js'),
        import('../seed.js') as Promise<SeedModule>,
      ]);
      const storageEnv = envSchema
        .pick({
          S3_ENDPOINT: true,
          S3_ACCESS_KEY: true,
          S3_SECRET_KEY: true,
          S3_BUCKET: true,
          S3_REGION: true,
          S3_PUBLIC_BASE_URL: true,
          PRESIGN_EXPIRY_SECONDS: true,
          FFMPEG_PATH: true,
          ESPEAK_PATH: true,
        })
        .safeParse(ctx.env);
      if (!storageEnv.success) {
        throw new ConfigProblem(`object storage is not configured: ${storageEnv.error.issues.map((i) => i.path.join('.')).join(', ')}`);
      }
      const storage = createStorage(storageEnv.data);
      const catalog = await seedCatalog(ctx.db(), storage, {});
      const text = [
        `catalog: ${catalog.voices} voices, ${catalog.actors} actors; media ${catalog.mediaCreated} rendered, ${catalog.mediaSkipped} already present`,
      ];
      let demo: Awaited<ReturnType<SeedModule['seedDemo']>> | undefined;
      if (f.demo) {
        demo = await seedDemo(ctx.db());
        text.push(`demo workspace ${demo.workspaceId} (${demo.credits} credits), project ${demo.projectId}`, `demo API key: ${demo.apiKey}`);
      }
      return {
        json: {
          catalog,
          demo: demo && {
            workspace_id: demo.workspaceId,
            project_id: demo.projectId,
            owner: demo.ownerEmail,
            credits: demo.credits,
            api_key_id: demo.apiKeyId,
            api_key: demo.apiKey,
          },
        },
        text,
      };
    },
  },
};
