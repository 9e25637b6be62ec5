// The Kubernetes chart (ops/helm/mediagen) for both overlays, rendered with the pinned helm and
// validated offline against the pinned Kubernetes, KEDA and prometheus-operator schemas; then what
// the schemas cannot say (test/support/k8s-manifests.ts manifestProblems): termination grace against
// the longest provider call and the Cluster Autoscaler's cap, least-privilege secrets per role,
// per-version autoscaling on each fleet's own queues, worker probes, tini as PID 1, bounded /tmp,
// ingress closed to workers, migrations before the rollout. A broken value must be caught.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { liveProviderNames } from '../../providers/index.js';
import { providerFleetsPath, providerFleetsYaml } from '../../scripts/generate/helm-provider-fleets.js';
import { providerKeys, roleScopedSecrets, routeMode, runsMediaTools, secretsOfRoles } from '../../shared/routing.js';
import { configVariables } from '../../shared/config.js';
import { storageIdentities, storagePolicy } from '../../shared/storage-policies.js';
import {
  credentialOwner,
  iamRoleOf,
  manifestProblems,
  overlays,
  render,
  rolesOf,
  root,
  schemaErrors,
  workerDeployments,
  type K8sObject,
} from '../support/k8s-manifests.js';

// Variables of the TLS, Postgres/S3 and payload-codec work of the same change, defined in
// shared/config/ by their own slices; once they are, this list is redundant.
const plannedVariables = ['PAYLOAD_CODEC_KEYS_FILE', 'PAYLOAD_CODEC_KEY_ID'];

const kinds = (objects: K8sObject[]) => new Set(objects.map((o) => o.kind));
const find = (objects: K8sObject[], kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);

for (const [overlay, file] of Object.entries(overlays)) {
  describe(`the chart with values-${overlay}.yaml`, () => {
    const objects = render([file]);

    test('every object validates against the pinned schemas, and every kind the issue names is there', () => {
      assert.deepEqual(schemaErrors(objects), []);
      for (const kind of ['Deployment', 'Service', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'ScaledObject', 'NetworkPolicy', 'Job'])
        assert.ok(kinds(objects).has(kind), `no ${kind} rendered`);
    });

    test('grace, secrets, autoscaling, network policies and the migrations hook all hold', () => {
      assert.deepEqual(manifestProblems(objects), []);
    });

    test('the gateways, workers and Job set only variables the config module reads', () => {
      const unknown = objects
        .filter((o) => (o.kind === 'Deployment' || o.kind === 'Job') && o.spec.template.metadata.labels['app.kubernetes.io/component'] !== 'codec-server')
        .flatMap((o) => (o.spec.template.spec.containers as { env?: { name: string }[] }[]).flatMap((c) => (c.env ?? []).map((e) => e.name)))
        .filter((n) => !configVariables.includes(n) && !plannedVariables.includes(n));
      assert.deepEqual([...new Set(unknown)], []);
    });

    test('one worker fleet per role of the prod topology and per live provider', () => {
      const fleets = workerDeployments(objects).map((d) => rolesOf(d).join(','));
      for (const roles of ['workflows,io,reconciler', 'fetch', 'webhooks', ...liveProviderNames.map((p) => `provider:${p}`)])
        assert.ok(fleets.includes(roles), `no worker Deployment runs ${roles}`);
    });
  });
}

describe('the provider fleets come from the provider list', () => {
  const envOf = (d: K8sObject) =>
    Object.fromEntries((d.spec.template.spec.containers[0].env as { name: string; value?: string }[]).map((e) => [e.name, e.value]));
  const fleetOf = (d: K8sObject) => d.metadata.labels?.['mediagen.io/fleet'];

  test("the chart's generated file is current (npm run helm:fleets)", () => {
    assert.equal(readFileSync(providerFleetsPath, 'utf8'), providerFleetsYaml(), 'ops/helm/mediagen/files/provider-fleets.yaml is stale: npm run helm:fleets');
  });

  test('no values file names a provider fleet but to set what is its own', () => {
    // A provider's fleet is generated: the values and overlays carry no roles or secrets for it.
    for (const file of [join(root, 'ops/helm/mediagen/values.yaml'), ...Object.values(overlays)]) {
      const text = readFileSync(file, 'utf8');
      assert.doesNotMatch(text, /roles: \["provider:/, `${file} declares a provider fleet's roles`);
      for (const secret of secretsOfRoles(liveProviderNames.map((p) => `provider:${p}`))) assert.doesNotMatch(text, new RegExp(`secrets:.*${secret}`), file);
    }
  });

  test("each provider fleet has its provider's role, keys and grace, with the shared settings and its own laid over them", () => {
    const workers = workerDeployments(render([overlays.small]));
    for (const provider of liveProviderNames) {
      const d = workers.find((w) => fleetOf(w) === provider);
      assert.ok(d, `no fleet for ${provider}`);
      assert.deepEqual(rolesOf(d), [`provider:${provider}`]);
      const env = envOf(d);
      // workers.providerFleet: concurrency 50 and a pool of 10, and its scaling.
      assert.equal(env.PROVIDER_CONCURRENCY, `${provider}=50`);
      assert.equal(env.DATABASE_POOL_SIZE, '10');
      const secrets = (d.spec.template.spec.containers[0].env as { name: string; valueFrom?: unknown }[]).filter((e) => e.valueFrom).map((e) => e.name);
      for (const s of secretsOfRoles([`provider:${provider}`])) assert.ok(secrets.includes(s), `${provider} fleet lacks ${s}`);
    }
    // azure's own entry (its endpoint and deployment) is laid over the generated one.
    const azure = envOf(workers.find((w) => fleetOf(w) === 'azure')!);
    assert.equal(azure.AZURE_OPENAI_ENDPOINT, 'https://example.openai.azure.com');
    assert.equal(azure.AZURE_OPENAI_IMAGE_DEPLOYMENT, 'gpt-image-1.5');
    assert.equal(azure.PROVIDER_CONCURRENCY, 'azure=50');
  });

  test("every process routes on the provider fleets' key names (PROVIDER_KEYS_SET): the core fleet quotes pipeline steps and batch items too", () => {
    const objects = render([overlays.small], ['workers.fleets.google.enabled=false']);
    const gateway = objects.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-gateway'))!;
    const keysSet = envOf(gateway).PROVIDER_KEYS_SET!;
    assert.deepEqual(
      keysSet.split(','),
      // Every key a provider needs to be live (an endpoint too) of the fleets enabled; never a value.
      [...new Set(liveProviderNames.filter((p) => p !== 'google').flatMap((p) => providerKeys[p] as readonly string[]))].sort(),
    );
    for (const w of workerDeployments(objects)) assert.equal(envOf(w).PROVIDER_KEYS_SET, keysSet, w.metadata.name);
    // The core fleet (no provider key of its own) sees the live models as its gateway does: a pipeline's talking actor step is live there.
    const core = workerDeployments(objects).find((w) => rolesOf(w).includes('io'))!;
    assert.equal(routeMode({ PROVIDERS_MODE: 'live', PROVIDER_KEYS_SET: envOf(core).PROVIDER_KEYS_SET }, 'talking-actor'), 'live');
    assert.equal(routeMode({ PROVIDERS_MODE: 'live', PROVIDER_KEYS_SET: envOf(core).PROVIDER_KEYS_SET }, 'veo-3.1'), 'live');
  });

  test("a fleet's own values win: its concurrency, its scaling, or enabled false to leave the provider out", () => {
    const objects = render(
      [overlays.small],
      ['workers.fleets.fal.concurrency=8', 'workers.fleets.fal.scaling.maxReplicas=9', 'workers.fleets.google.enabled=false'],
    );
    const workers = workerDeployments(objects);
    const fal = workers.find((w) => fleetOf(w) === 'fal')!;
    assert.equal(envOf(fal).PROVIDER_CONCURRENCY, 'fal=8');
    assert.equal(find(objects, 'ScaledObject', fal.metadata.name)?.spec.maxReplicaCount, 9);
    assert.equal(find(objects, 'ScaledObject', fal.metadata.name)?.spec.minReplicaCount, 2, 'the shared scaling stays under the own one');
    assert.equal(
      workers.find((w) => fleetOf(w) === 'google'),
      undefined,
    );
    assert.equal(workers.find((w) => fleetOf(w) === 'xai')?.spec.template.spec.terminationGracePeriodSeconds, 75);
  });
});

describe('the media sandbox in the chart', () => {
  const envOf = (d: K8sObject, name: string) =>
    (d.spec.template.spec.containers[0].env as { name: string; value?: string }[]).filter((e) => e.name === name).map((e) => e.value);
  const caps = (d: K8sObject) => d.spec.template.spec.containers[0].securityContext.capabilities as { drop: string[]; add?: string[] };

  test('by default the fleets that run media tools make the sandbox (required, root with its six capabilities); every other fleet stays non-root with it off', () => {
    const fleets = workerDeployments(render([overlays.small]));
    assert.ok(fleets.some((d) => runsMediaTools(rolesOf(d))) && fleets.some((d) => !runsMediaTools(rolesOf(d))));
    for (const d of fleets) {
      const name = d.metadata.name;
      const pod = d.spec.template.spec.securityContext;
      const container = d.spec.template.spec.containers[0].securityContext;
      assert.equal(container.allowPrivilegeEscalation, false, name);
      assert.deepEqual(caps(d).drop, ['ALL'], name);
      if (runsMediaTools(rolesOf(d))) {
        assert.deepEqual(envOf(d, 'MEDIA_SANDBOX'), ['required'], name);
        assert.equal(pod.runAsUser, 0, `${name}: unshare --net and the switch to the sandbox user need root`);
        assert.deepEqual([...(caps(d).add ?? [])].sort(), ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'SETGID', 'SETUID', 'SYS_ADMIN'], name);
      } else {
        assert.deepEqual(envOf(d, 'MEDIA_SANDBOX'), ['off'], name);
        assert.equal(pod.runAsNonRoot, true, name);
        assert.equal(caps(d).add, undefined, name);
      }
    }
  });

  test('workers.mediaSandbox=auto keeps every fleet non-root without added capabilities', () => {
    for (const d of workerDeployments(render([overlays.small], ['workers.mediaSandbox=auto']))) {
      assert.equal(d.spec.template.spec.securityContext.runAsNonRoot, true, d.metadata.name);
      assert.equal(caps(d).add, undefined, d.metadata.name);
      assert.deepEqual(envOf(d, 'MEDIA_SANDBOX'), [runsMediaTools(rolesOf(d)) ? 'auto' : 'off'], d.metadata.name);
    }
  });
});

test('the two overlays size the deployment differently', () => {
  const [small, large] = [render([overlays.small]), render([overlays.large])];
  const sizes = (objects: K8sObject[]) => ({
    gateway: find(objects, 'HorizontalPodAutoscaler', 'mg-gateway')?.spec,
    core: (({ minReplicaCount, maxReplicaCount }) => ({ minReplicaCount, maxReplicaCount }))(find(objects, 'ScaledObject', 'mg-worker-core-0000000')!.spec),
    coreResources: find(objects, 'Deployment', 'mg-worker-core-0000000')?.spec.template.spec.containers[0].resources,
  });
  const [s, l] = [sizes(small), sizes(large)];
  assert.ok(s.gateway && l.gateway);
  assert.ok(l.gateway.maxReplicas > s.gateway.maxReplicas, 'the large overlay allows more gateways');
  assert.ok(l.core.maxReplicaCount > s.core.maxReplicaCount, 'the large overlay allows more core workers');
  assert.notDeepEqual(s.coreResources, l.coreResources);
});

test('a rainbow deploy renders each fleet once per build, the gateway and migrations on the current build', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mg-k8s-'));
  try {
    const builds = join(dir, 'builds.yaml');
    writeFileSync(
      builds,
      stringify({
        builds: [
          { id: 'a1', image: 'registry.example.com/media-gen:a1', current: false },
          { id: 'b2', image: 'registry.example.com/media-gen:b2', current: true },
        ],
      }),
    );
    const objects = render([overlays.small, builds]);
    assert.deepEqual(schemaErrors(objects), []);
    assert.deepEqual(manifestProblems(objects), []);
    for (const id of ['a1', 'b2']) {
      const d = find(objects, 'Deployment', `mg-worker-fal-${id}`);
      assert.ok(d, `no fal fleet for build ${id}`);
      assert.equal(d.spec.template.spec.containers[0].image, `registry.example.com/media-gen:${id}`);
      const env = d.spec.template.spec.containers[0].env as { name: string; value?: string }[];
      assert.equal(env.find((e) => e.name === 'WORKER_BUILD_ID')?.value, id);
      assert.ok(find(objects, 'ScaledObject', `mg-worker-fal-${id}`));
    }
    assert.equal(find(objects, 'Deployment', 'mg-gateway')?.spec.template.spec.containers[0].image, 'registry.example.com/media-gen:b2');
    assert.equal(find(objects, 'Job', 'mg-migrate')?.spec.template.spec.containers[0].image, 'registry.example.com/media-gen:b2');
    // The rollback guard keeps both builds and names the current one.
    const guard = find(objects, 'Job', 'mg-deployment-guard')?.spec.template.spec.containers[0];
    assert.equal(guard?.image, 'registry.example.com/media-gen:b2');
    assert.deepEqual(guard?.args.slice(3), ['guard', '--keep', 'a1,b2', '--current', 'b2', '--wait', '120']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with secrets.create the chart writes one Secret per fleet holding only what its roles read, before the migrations Job', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mg-k8s-'));
  try {
    // Placeholders, not secrets: the chart only places them.
    const values = join(dir, 'secrets.yaml');
    const placeholder = 'test-placeholder';
    writeFileSync(
      values,
      stringify({
        secrets: { create: true },
        codecServer: { enabled: true },
        secretValues: {
          databaseUrlApp: 'postgres://app@db.invalid/mediagen?sslmode=verify-full&sslrootcert=/etc/mediagen/db-ca/ca.pem',
          databaseUrlMigrate: 'postgres://owner@db.invalid/mediagen?sslmode=verify-full&sslrootcert=/etc/mediagen/db-ca/ca.pem',
          s3MediaPrefixSecret: placeholder,
          databaseCa: placeholder,
          temporalCa: placeholder,
          temporalClientCert: placeholder,
          temporalClientKey: placeholder,
          payloadCodecKeys: placeholder,
          codecServerToken: placeholder,
          roleSecrets: Object.fromEntries(roleScopedSecrets.map((n) => [n, placeholder])),
        },
      }),
    );
    const objects = render([overlays.small, values]);
    assert.deepEqual(schemaErrors(objects), []);
    assert.deepEqual(manifestProblems(objects), []);
    assert.deepEqual(Object.keys(find(objects, 'Secret', 'mg-fleet-fal')?.stringData ?? {}), ['FAL_KEY']);
    assert.deepEqual(Object.keys(find(objects, 'Secret', 'mg-fleet-elevenlabs')?.stringData ?? {}), ['ELEVENLABS_API_KEY']);
    assert.equal(find(objects, 'Secret', 'mg-fleet-core'), undefined, 'the core fleet reads no role-scoped secret');
    // The gateways encrypt webhook endpoint secrets: their own Secret holds the webhook secrets key
    // (and nothing else), and the gateway Deployment reads it from there.
    assert.deepEqual(Object.keys(find(objects, 'Secret', 'mg-fleet-gateway')?.stringData ?? {}), secretsOfRoles(['gateway']));
    assert.deepEqual(secretsOfRoles(['gateway']), ['WEBHOOK_SECRETS_KEY']);
    const gatewayEnv = find(objects, 'Deployment', 'mg-gateway')?.spec.template.spec.containers[0].env as Array<{
      name: string;
      valueFrom?: { secretKeyRef?: { name: string } };
    }>;
    assert.equal(gatewayEnv.find((e) => e.name === 'WEBHOOK_SECRETS_KEY')?.valueFrom?.secretKeyRef?.name, 'mg-fleet-gateway');
    // A database URL that would not check the server's certificate is refused at render time.
    assert.throws(
      () => render([overlays.small, values], ['secretValues.databaseUrlApp=postgres://app@db.invalid/mediagen?sslmode=require']),
      /secretValues.databaseUrlApp: the database URL must carry sslmode=verify-full/,
    );
    // So is one that does not name the CA the chart mounts.
    assert.throws(
      () => render([overlays.small, values], ['secretValues.databaseUrlApp=postgres://app@db.invalid/mediagen?sslmode=verify-full']),
      /secretValues.databaseUrlApp: with database.caFile the URL names the mounted CA/,
    );
    assert.deepEqual(Object.keys(find(objects, 'Secret', 'mg-s3')?.stringData ?? {}), ['S3_MEDIA_PREFIX_SECRET'], 'irsa: no S3 key, only the media prefix key');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe('per-fleet database roles and storage identities', () => {
  /** The Secret each of a workload's credential variables comes from. */
  const refs = (o: K8sObject) =>
    Object.fromEntries(
      (o.spec.template.spec.containers[0].env as { name: string; valueFrom?: { secretKeyRef?: { name: string } } }[])
        .filter((e) => ['DATABASE_URL', 'S3_ACCESS_KEY', 'S3_SECRET_KEY', 'S3_MEDIA_PREFIX_SECRET'].includes(e.name))
        .map((e) => [e.name, e.valueFrom?.secretKeyRef?.name]),
    );
  const workloads = (objects: K8sObject[]) => objects.filter((o) => (o.kind === 'Deployment' || o.kind === 'Job') && credentialOwner(o));
  const fleetOf = (o: K8sObject) => (credentialOwner(o)!.db === 'gateway' ? 'gateway' : (o.metadata.labels?.['mediagen.io/fleet'] ?? ''));
  const withValues = (values: object) => {
    const dir = mkdtempSync(join(tmpdir(), 'mg-k8s-'));
    try {
      writeFileSync(join(dir, 'values.yaml'), stringify(values));
      return render([overlays.small, join(dir, 'values.yaml')]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  // Placeholders, not secrets: the chart only places them.
  const url = (user: string) => `postgres://${user}@db.invalid/mediagen?sslmode=verify-full&sslrootcert=/etc/mediagen/db-ca/ca.pem`;
  const fleetSecrets = {
    gateway: 'db-gateway',
    core: 'db-workflows-reconciler',
    fetch: 'db-fetch',
    webhooks: 'db-webhooks',
    ...Object.fromEntries(liveProviderNames.map((f) => [f, 'db-provider'])),
  } as Record<string, string>;
  const identitySecrets = { gateway: 's3-gateway', worker: 's3-worker', reconciler: 's3-reconciler' } as Record<string, string>;
  const perFleet = {
    secrets: { create: true },
    database: { fleetRolePrefix: 'mediagen', fleetSecrets },
    s3: { auth: 'static', identitySecrets },
    secretValues: {
      databaseUrlApp: url('app'),
      databaseUrlMigrate: url('owner'),
      fleetDatabaseUrls: Object.fromEntries(Object.entries(fleetSecrets).map(([f, name]) => [f, url(name.replace(/^db-/, 'mediagen_').replace(/-/g, '_'))])),
      s3AccessKey: 'owner',
      s3SecretKey: 'test-placeholder',
      s3MediaPrefixSecret: 'test-placeholder',
      s3Identities: Object.fromEntries(Object.keys(identitySecrets).map((i) => [i, { accessKey: `mediagen-${i}`, secretKey: 'test-placeholder' }])),
      databaseCa: 'test-placeholder',
      temporalCa: 'test-placeholder',
      temporalClientCert: 'test-placeholder',
      temporalClientKey: 'test-placeholder',
      payloadCodecKeys: 'test-placeholder',
      roleSecrets: Object.fromEntries(roleScopedSecrets.map((n) => [n, 'test-placeholder'])),
    },
  };

  test("each workload mounts its own fleet's database Secret and its own identity's keys, no other; the migrations Job grants the fleet roles", () => {
    const objects = withValues(perFleet);
    assert.deepEqual(schemaErrors(objects), []);
    assert.deepEqual(manifestProblems(objects), []);
    const all = new Set([...Object.values(fleetSecrets), ...Object.values(identitySecrets)]);
    for (const o of workloads(objects)) {
      const owner = credentialOwner(o)!;
      const r = refs(o);
      if (owner.db === 'owner') {
        assert.deepEqual(
          r,
          { DATABASE_URL: 'mg-db-migrate', S3_ACCESS_KEY: 'mg-s3', S3_SECRET_KEY: 'mg-s3', S3_MEDIA_PREFIX_SECRET: 'mg-s3' },
          'the seed writes as the owner',
        );
        assert.match(o.spec.template.spec.containers[0].args.join(' '), /migrate --app-role mediagen_app --fleet-roles mediagen && /);
        continue;
      }
      const expected = {
        DATABASE_URL: fleetSecrets[fleetOf(o)],
        S3_ACCESS_KEY: identitySecrets[owner.s3],
        S3_SECRET_KEY: identitySecrets[owner.s3],
        S3_MEDIA_PREFIX_SECRET: 'mg-s3',
      };
      assert.deepEqual(r, expected, o.metadata.name);
      // Nothing of another fleet or identity anywhere in the pod (env, envFrom, volumes).
      const mounted = JSON.stringify(o.spec.template.spec);
      for (const other of all)
        if (other !== expected.DATABASE_URL && other !== expected.S3_ACCESS_KEY)
          assert.ok(!mounted.includes(`"${other}"`), `${o.metadata.name} mounts ${other}`);
    }
    // One fleet holds the reconciler's identity (the one that sets the bucket lifecycle), and it runs the reconciler.
    const reconcilers = workerDeployments(objects).filter((d) => refs(d).S3_ACCESS_KEY === 's3-reconciler');
    assert.deepEqual(
      reconcilers.map((d) => d.metadata.name),
      ['mg-worker-core-0000000'],
    );
    assert.ok(rolesOf(reconcilers[0]!).includes('reconciler'));
    // The Secrets the chart writes: each holds its own credentials only.
    const secret = (name: string) => find(objects, 'Secret', name)?.stringData ?? {};
    assert.deepEqual(Object.keys(secret('db-provider')), ['DATABASE_URL']);
    assert.equal(new URL(secret('db-workflows-reconciler').DATABASE_URL!).username, 'mediagen_workflows_reconciler');
    assert.deepEqual(secret('s3-gateway'), { S3_ACCESS_KEY: 'mediagen-gateway', S3_SECRET_KEY: 'test-placeholder' });
    assert.deepEqual(Object.keys(secret('mg-s3')).sort(), ['S3_ACCESS_KEY', 'S3_MEDIA_PREFIX_SECRET', 'S3_SECRET_KEY']);
  });

  test("without them every workload keeps the one app Secret and the one set of keys (an install from before), and a fleet's Secret given to another is reported", () => {
    for (const o of workloads(render([overlays.small]))) {
      if (credentialOwner(o)!.db === 'owner') continue;
      assert.deepEqual(refs(o), { DATABASE_URL: 'mg-db-app', S3_MEDIA_PREFIX_SECRET: 'mg-s3' }, `${o.metadata.name}: irsa, the app role's URL`);
    }
    const objects = render([overlays.small], ['s3.auth=static']);
    for (const o of workloads(objects))
      if (credentialOwner(o)!.db !== 'owner')
        assert.deepEqual(refs(o), { DATABASE_URL: 'mg-db-app', S3_ACCESS_KEY: 'mg-s3', S3_SECRET_KEY: 'mg-s3' }, o.metadata.name);
    assert.match(find(objects, 'Job', 'mg-migrate')!.spec.template.spec.containers[0].args.join(' '), /migrate --app-role mediagen_app && /);
    // One fleet moved over, the rest on the fallback: fine.
    assert.deepEqual(manifestProblems(render([overlays.small], ['database.fleetSecrets.fetch=db-fetch'])), []);
    // Two fleets of different roles on one Secret: the fetch fleet would hold the webhooks fleet's role.
    const shared = manifestProblems(render([overlays.small], ['database.fleetSecrets.fetch=db-x', 'database.fleetSecrets.webhooks=db-x']));
    assert.ok(shared.includes('Secret db-x: the database role of fetch and webhooks'), shared.join('\n'));
    const keys = manifestProblems(render([overlays.small], ['s3.auth=static', 's3.identitySecrets.gateway=s3-x', 's3.identitySecrets.reconciler=s3-x']));
    assert.ok(keys.includes('Secret s3-x: the storage identity of gateway and reconciler'), keys.join('\n'));
  });

  test('refused at render time: identity keys with irsa, fleets sharing a Secret with different URLs, a prefix that is no identifier', () => {
    assert.throws(
      () => render([overlays.small], ['s3.identitySecrets.gateway=s3-gateway']),
      /s3.identitySecrets: static keys per identity need s3.auth static/,
    );
    assert.throws(
      () =>
        withValues({
          ...perFleet,
          secretValues: { ...perFleet.secretValues, fleetDatabaseUrls: { ...perFleet.secretValues.fleetDatabaseUrls, xai: url('other') } },
        }),
      /fleets sharing Secret db-provider need the same URL/,
    );
    assert.throws(
      () =>
        withValues({
          ...perFleet,
          secretValues: { ...perFleet.secretValues, fleetDatabaseUrls: { ...perFleet.secretValues.fleetDatabaseUrls, fetch: 'postgres://x@db.invalid/m' } },
        }),
      /fleetDatabaseUrls.fetch: the database URL must carry sslmode=verify-full/,
    );
    assert.throws(() => render([overlays.small], ['database.fleetRolePrefix=x; rm -rf /']), /database.fleetRolePrefix: a plain lower-case identifier/);
  });
});

describe('an IAM role per storage identity (irsa)', () => {
  const arn = (identity: string) => `arn:aws:iam::123456789012:role/mediagen-${identity}`;
  const roleArns = { gateway: arn('gateway'), worker: arn('worker'), reconciler: arn('reconciler') } as Record<string, string>;
  const sets = (arns: Record<string, string>) => Object.entries(arns).map(([identity, value]) => `s3.roleArns.${identity}=${value}`);
  const defaultRole = 'arn:aws:iam::123456789012:role/mediagen-media-bucket';
  const apps = (objects: K8sObject[]) =>
    objects.filter((o) => o.kind === 'Deployment' && ['gateway', 'worker'].includes(o.spec.template.metadata.labels['app.kubernetes.io/component']));
  const accounts = (objects: K8sObject[]) => objects.filter((o) => o.kind === 'ServiceAccount');
  const account = (objects: K8sObject[], o: K8sObject) => find(objects, 'ServiceAccount', o.spec.template.spec.serviceAccountName)!;
  const roleAnnotations = (sa: K8sObject) => Object.keys(sa.metadata.annotations ?? {}).filter((k) => k.startsWith('eks.amazonaws.com/role-arn'));

  test("with s3.roleArns each gateway and worker runs as its identity's ServiceAccount carrying exactly its identity's role; only the reconciler's fleet has the reconciler's", () => {
    for (const overlay of Object.values(overlays)) {
      const objects = render([overlay], sets(roleArns));
      assert.deepEqual(schemaErrors(objects), []);
      assert.deepEqual(manifestProblems(objects), []);
      const workloads = apps(objects);
      assert.ok(workloads.length > 3);
      for (const o of workloads) {
        const identity = credentialOwner(o)!.s3;
        const sa = account(objects, o);
        assert.equal(sa.metadata.name, `mg-${identity}`, o.metadata.name);
        assert.deepEqual(roleAnnotations(sa), ['eks.amazonaws.com/role-arn'], `${sa.metadata.name}: one role`);
        assert.equal(iamRoleOf(objects, o), roleArns[identity], o.metadata.name);
        assert.ok(!JSON.stringify(o).includes('arn:aws:iam::'), `${o.metadata.name}: no role named in the pod itself`);
      }
      const reconcilers = workloads.filter((o) => iamRoleOf(objects, o) === roleArns.reconciler);
      assert.deepEqual(
        reconcilers.map((o) => o.metadata.name),
        ['mg-worker-core-0000000'],
      );
      assert.ok(rolesOf(reconcilers[0]!).includes('reconciler'));
      assert.ok(workloads.some((o) => iamRoleOf(objects, o) === roleArns.gateway) && workloads.some((o) => iamRoleOf(objects, o) === roleArns.worker));
      // No account but the reconciler's carries its role; the shared one, left to the rollback guard, carries none.
      assert.deepEqual(
        accounts(objects)
          .filter((sa) => sa.metadata.annotations?.['eks.amazonaws.com/role-arn'] === roleArns.reconciler)
          .map((sa) => sa.metadata.name),
        ['mg-reconciler'],
      );
      assert.equal(find(objects, 'ServiceAccount', 'mg-app')!.metadata.annotations?.['eks.amazonaws.com/role-arn'], undefined);
      const guard = objects.find((o) => o.kind === 'Job' && o.metadata.name === 'mg-deployment-guard');
      if (guard) assert.equal(iamRoleOf(objects, guard), undefined, 'the rollback guard uses no S3');
      assert.equal(find(objects, 'ServiceAccount', 'mg-migrate')!.metadata.annotations?.['eks.amazonaws.com/role-arn'], defaultRole, 'the seed');
    }
  });

  test('an identity without a role runs as <release>-app with s3.roleArn; without s3.roleArns the accounts are as before', () => {
    const before = render([overlays.small]);
    assert.deepEqual(
      accounts(before)
        .map((sa) => sa.metadata.name)
        .sort(),
      ['mg-app', 'mg-migrate'],
    );
    for (const o of apps(before)) {
      assert.equal(o.spec.template.spec.serviceAccountName, 'mg-app', o.metadata.name);
      assert.equal(iamRoleOf(before, o), defaultRole, o.metadata.name);
    }
    const partial = render([overlays.small], sets({ reconciler: roleArns.reconciler! }));
    assert.deepEqual(manifestProblems(partial), []);
    for (const o of apps(partial)) {
      const own = credentialOwner(o)!.s3 === 'reconciler';
      assert.equal(o.spec.template.spec.serviceAccountName, own ? 'mg-reconciler' : 'mg-app', o.metadata.name);
      assert.equal(iamRoleOf(partial, o), own ? roleArns.reconciler : defaultRole, o.metadata.name);
    }
  });

  test("refused at render time: s3.roleArns with static keys, an unknown identity, a value that is no role ARN; reported: an identity's role given to another", () => {
    assert.throws(
      () => render([overlays.small], ['s3.auth=static', ...sets({ worker: roleArns.worker! })]),
      /s3.roleArns: an IAM role per identity needs s3.auth irsa/,
    );
    assert.throws(() => render([overlays.small], sets({ workers: roleArns.worker! })), /s3.roleArns: unknown storage identity "workers"/);
    assert.throws(() => render([overlays.small], sets({ gateway: 'mediagen-gateway' })), /s3.roleArns.gateway: "mediagen-gateway" is not an IAM role ARN/);
    const shared = manifestProblems(render([overlays.small], sets({ gateway: roleArns.reconciler!, reconciler: roleArns.reconciler! })));
    assert.ok(shared.includes(`IAM role ${roleArns.reconciler}: the storage identity of gateway and reconciler`), shared.join('\n'));
    // The fallback's role as the reconciler's own: the gateway and the other fleets would hold it too.
    const fallback = manifestProblems(render([overlays.small], sets({ reconciler: defaultRole })));
    assert.ok(fallback.includes(`IAM role ${defaultRole}: the storage identity of gateway and reconciler and worker`), fallback.join('\n'));
  });

  test("the IAM policies docs/operations/managed-services.md gives are the code's, and only the reconciler may set the bucket lifecycle", () => {
    const doc = readFileSync(join(root, 'docs/operations/managed-services.md'), 'utf8');
    const documented = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as unknown);
    assert.deepEqual(
      documented,
      storageIdentities.map((identity) => storagePolicy(identity, '<bucket>')),
    );
    const lifecycle = storageIdentities.filter((i) => storagePolicy(i, 'b').Statement.some((st) => st.Action.includes('s3:PutLifecycleConfiguration')));
    assert.deepEqual(lifecycle, ['reconciler']);
  });
});

test('with egress restricted, only the fleets that call the internet may reach public addresses', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mg-k8s-'));
  try {
    const values = join(dir, 'egress.yaml');
    const services = [{ to: [{ ipBlock: { cidr: '10.20.0.0/16' } }], ports: [{ protocol: 'TCP', port: 5432 }] }];
    writeFileSync(values, stringify({ networkPolicy: { egress: { enabled: true, services } } }));
    const objects = render([overlays.small, values]);
    assert.deepEqual(schemaErrors(objects), []);
    assert.deepEqual(manifestProblems(objects), []);
    const internet = find(objects, 'NetworkPolicy', 'mg-egress-internet')!;
    const reaches = (name: string) => {
      const labels = find(objects, 'Deployment', name)!.spec.template.metadata.labels as Record<string, string>;
      return Object.entries(internet.spec.podSelector.matchLabels as Record<string, string>).every(([k, v]) => labels[k] === v);
    };
    assert.deepEqual(['mg-gateway', 'mg-worker-core-0000000', 'mg-worker-fetch-0000000', 'mg-worker-webhooks-0000000', 'mg-worker-fal-0000000'].map(reaches), [
      false,
      false,
      true,
      true,
      true,
    ]);
    assert.ok((internet.spec.egress[0].to[0].ipBlock.except as string[]).includes('169.254.0.0/16'), 'instance metadata is never reachable');
    assert.deepEqual(find(objects, 'NetworkPolicy', 'mg-egress-services')!.spec.egress.slice(1), services);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe('a broken value is reported', () => {
  test('a provider fleet whose grace is below its longest call', () => {
    const problems = manifestProblems(render([overlays.small], ['workers.fleets.openai.shutdownGraceSeconds=60']));
    assert.ok(
      problems.some((p) => p.startsWith('mg-worker-openai-0000000: terminationGracePeriodSeconds 75 is below')),
      problems.join('\n'),
    );
    assert.ok(problems.some((p) => p.startsWith('mg-worker-openai-0000000: WORKER_SHUTDOWN_GRACE_MS 60000 is below')));
  });

  test('a gateway whose grace is below its drain', () => {
    const problems = manifestProblems(render([overlays.small], ['gateway.terminationMarginSeconds=-15']));
    assert.ok(
      problems.some((p) => p.startsWith('mg-gateway: terminationGracePeriodSeconds 295 is below')),
      problems.join('\n'),
    );
  });

  test('a gateway that would cut a request short on a rollout', () => {
    const problems = manifestProblems(render([overlays.small], ['gateway.stopGraceSeconds=60']));
    assert.ok(
      problems.includes('mg-gateway: GATEWAY_SHUTDOWN_GRACE_MS 60000 is below the longest request, GATEWAY_REQUEST_TIMEOUT_MS 300000'),
      problems.join('\n'),
    );
  });

  test('a fleet given a key its roles do not read', () => {
    const problems = manifestProblems(render([overlays.small], ['workers.fleets.fal.secrets={FAL_KEY,OPENAI_API_KEY}']));
    assert.ok(problems.includes('Deployment mg-worker-fal-0000000: receives OPENAI_API_KEY, which its roles (provider:fal) do not read'), problems.join('\n'));
  });

  test('a fleet whose ScaledObject watches another queue', () => {
    const problems = manifestProblems(render([overlays.small], ['taskQueuePrefix=other']).map(withPrefixEnv('media')));
    assert.ok(
      problems.some((p) => p.startsWith('mg-worker-fetch-0000000: its ScaledObject watches other-fetch/activity')),
      problems.join('\n'),
    );
  });

  test('a kind without a schema validator', () => {
    assert.deepEqual(schemaErrors([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }]), ['v1/ConfigMap x: no schema validator for this kind']);
  });

  test('an object the schema refuses (a Deployment, a ScaledObject)', () => {
    const [gateway] = render([overlays.small]).filter((o) => o.kind === 'Deployment');
    const broken = structuredClone(gateway!);
    broken.spec.template.spec.terminationGracePeriodSeconds = 'soon';
    assert.equal(schemaErrors([broken]).length, 1);
    const scaled = structuredClone(render([overlays.small]).find((o) => o.kind === 'ScaledObject')!);
    // KEDA's trigger metadata is a map of strings: an unquoted number would be refused by the API server.
    scaled.spec.triggers[0].metadata.targetQueueSize = 8;
    assert.match(schemaErrors([scaled])[0] ?? '', /targetQueueSize must be string/);
  });
});

/** The workers' TASK_QUEUE_PREFIX rewritten (the ScaledObjects keep theirs): a fleet and its scaler out of step. */
function withPrefixEnv(prefix: string) {
  return (o: K8sObject): K8sObject => {
    if (o.kind !== 'Deployment') return o;
    const copy = structuredClone(o);
    for (const c of copy.spec.template.spec.containers) for (const e of c.env ?? []) if (e.name === 'TASK_QUEUE_PREFIX') e.value = prefix;
    return copy;
  };
}

describe('the pods as Kubernetes runs them', () => {
  const objects = render([overlays.small]);
  const workloads = objects.filter((o) => o.kind === 'Deployment' || o.kind === 'Job');
  const container = (d: K8sObject) => d.spec.template.spec.containers[0];
  const env = (d: K8sObject, name: string) => (container(d).env as { name: string; value?: string }[]).find((e) => e.name === name)?.value;

  test('every worker has startup and liveness probes on /healthz and readiness on /readyz, on its metrics port served beyond loopback', () => {
    for (const d of workerDeployments(objects)) {
      const c = container(d);
      assert.deepEqual(
        [c.startupProbe?.httpGet, c.livenessProbe?.httpGet, c.readinessProbe?.httpGet],
        [
          { path: '/healthz', port: 'metrics' },
          { path: '/healthz', port: 'metrics' },
          { path: '/readyz', port: 'metrics' },
        ],
        d.metadata.name,
      );
      assert.equal(env(d, 'METRICS_HOST'), '0.0.0.0', d.metadata.name);
      assert.ok(c.startupProbe.periodSeconds * c.startupProbe.failureThreshold >= 120, `${d.metadata.name}: a slow start is not killed`);
    }
    const problems = manifestProblems(render([overlays.small], ['workers.probes=null']));
    assert.ok(problems.includes('mg-worker-core-0000000: no livenessProbe'), problems.join('\n'));
  });

  test('no container replaces the image ENTRYPOINT, so tini stays PID 1', () => {
    for (const o of workloads)
      for (const c of o.spec.template.spec.containers) {
        assert.equal(c.command, undefined, `${o.metadata.name}/${c.name}`);
        assert.ok(Array.isArray(c.args) && c.args.length > 0, `${o.metadata.name}/${c.name} names its program in args`);
      }
    const broken = structuredClone(find(objects, 'Deployment', 'mg-worker-fal-0000000')!);
    broken.spec.template.spec.containers[0].command = ['node', 'dist/worker/main.js'];
    assert.ok(
      manifestProblems([...objects.filter((o) => o.metadata.name !== broken.metadata.name || o.kind !== 'Deployment'), broken]).includes(
        "Deployment mg-worker-fal-0000000: container worker sets command, which drops the image's ENTRYPOINT (tini); use args",
      ),
    );
  });

  test("a grace beyond the Cluster Autoscaler's 600 s is only there with safe-to-evict false, said in the values", () => {
    for (const d of objects.filter((o) => o.kind === 'Deployment')) {
      const grace = d.spec.template.spec.terminationGracePeriodSeconds as number;
      const annotation = d.spec.template.metadata.annotations?.['cluster-autoscaler.kubernetes.io/safe-to-evict'];
      assert.equal(annotation, grace > 600 ? 'false' : undefined, `${d.metadata.name}: grace ${grace}`);
    }
    // The fleets with a synchronous paid call of up to 600 s.
    const long = objects.filter((o) => o.kind === 'Deployment' && o.spec.template.spec.terminationGracePeriodSeconds > 600).map((o) => o.metadata.name);
    assert.deepEqual(long.sort(), ['mg-worker-azure-0000000', 'mg-worker-byteplus-0000000', 'mg-worker-openai-0000000']);
    assert.throws(
      () => render([overlays.small], ['workers.fleets.openai.safeToEvict=true']),
      /workers.fleets.openai: terminationGracePeriodSeconds 645 exceeds the Cluster Autoscaler's 600 s/,
    );
    const unannotated = structuredClone(find(objects, 'Deployment', 'mg-worker-openai-0000000')!);
    delete unannotated.spec.template.metadata.annotations;
    assert.ok(
      manifestProblems([...objects.filter((o) => o !== find(objects, 'Deployment', 'mg-worker-openai-0000000')), unannotated]).some((p) =>
        p.startsWith("Deployment mg-worker-openai-0000000: terminationGracePeriodSeconds 645 exceeds the Cluster Autoscaler's 600 s"),
      ),
    );
  });

  test('the fleets that run media tools cap their runs per pod, and every /tmp has a size limit that holds them', () => {
    for (const d of workerDeployments(objects)) {
      const tools = runsMediaTools(rolesOf(d));
      assert.equal(env(d, 'MEDIA_TOOL_CONCURRENCY'), tools ? '2' : undefined, d.metadata.name);
      const tmp = (d.spec.template.spec.volumes as { name: string; emptyDir?: { sizeLimit?: string } }[]).find((v) => v.name === 'tmp');
      assert.equal(tmp?.emptyDir?.sizeLimit, tools ? '10Gi' : '1Gi', d.metadata.name);
    }
    for (const o of workloads) {
      const tmp = (o.spec.template.spec.volumes as { name: string; emptyDir?: { sizeLimit?: string } }[]).find((v) => v.name === 'tmp');
      assert.ok(tmp?.emptyDir?.sizeLimit, `${o.metadata.name}: /tmp without a sizeLimit`);
    }
    const problems = manifestProblems(render([overlays.small], ['workers.mediaTools.tmpSizeLimit=4Gi']));
    assert.ok(
      problems.includes('mg-worker-fal-0000000: /tmp sizeLimit 4Gi is below MEDIA_TOOL_CONCURRENCY 2 × 2 × MEDIA_TOOL_FILE_MB 2048'),
      problems.join('\n'),
    );
    assert.ok(
      manifestProblems(render([overlays.small], ['workers.fleets.fal.mediaToolConcurrency=4'])).includes(
        'mg-worker-fal-0000000: /tmp sizeLimit 10Gi is below MEDIA_TOOL_CONCURRENCY 4 × 2 × MEDIA_TOOL_FILE_MB 2048',
      ),
    );
  });

  test('each ScaledObject scales on CPU beside the backlog, with a fallback that never shrinks a fleet it cannot read', () => {
    for (const so of objects.filter((o) => o.kind === 'ScaledObject')) {
      const triggers = so.spec.triggers as { type: string; metricType?: string; metadata: Record<string, string> }[];
      assert.deepEqual(
        triggers.filter((t) => t.type === 'cpu'),
        [{ type: 'cpu', metricType: 'Utilization', metadata: { value: '70' } }],
        so.metadata.name,
      );
      assert.ok(triggers.filter((t) => t.type === 'temporal').every((t) => t.metricType === 'AverageValue'));
      assert.deepEqual(so.spec.fallback, { failureThreshold: 4, replicas: so.spec.minReplicaCount, behavior: 'currentReplicasIfHigher' }, so.metadata.name);
    }
    const problems = manifestProblems(render([overlays.small], ['workers.keda.cpuUtilization=0']));
    assert.ok(problems.includes('mg-worker-core-0000000: its ScaledObject scales on the backlog alone'), problems.join('\n'));
    // The KEDA schema refuses a fallback behavior it does not know.
    const broken = structuredClone(objects.find((o) => o.kind === 'ScaledObject')!);
    broken.spec.fallback.behavior = 'keep';
    assert.match(schemaErrors([broken])[0] ?? '', /behavior must be equal to one of the allowed values/);
  });
});

describe('the Prometheus Operator objects', () => {
  test('are off by default', () => {
    const objects = render([overlays.large]);
    assert.deepEqual(
      objects.filter((o) => o.kind === 'ServiceMonitor' || o.kind === 'PrometheusRule' || o.metadata.name === 'mg-metrics'),
      [],
    );
  });

  test('when on: schema-valid, the ServiceMonitor reaches every gateway and worker, the rule is ops/prometheus/alerts.yml', () => {
    const objects = render(
      [overlays.small],
      ['monitoring.serviceMonitor.enabled=true', 'monitoring.prometheusRule.enabled=true', 'monitoring.prometheusRule.labels.release=kps'],
    );
    assert.deepEqual(schemaErrors(objects), []);
    assert.deepEqual(manifestProblems(objects), []);
    const rule = find(objects, 'PrometheusRule', 'mg')!;
    assert.equal(rule.metadata.labels?.release, 'kps');
    const alerts = (rule.spec.groups as { rules: { alert?: string }[] }[]).flatMap((g) => g.rules.map((r) => r.alert));
    assert.ok(alerts.includes('MediagenTaskQueueBacklogOld') && alerts.includes('MediagenJobFailureRateHigh'), alerts.join(', '));
    // A ServiceMonitor on a port the Service does not have is reported.
    const broken = structuredClone(find(objects, 'ServiceMonitor', 'mg')!);
    broken.spec.endpoints[0].port = 'http';
    assert.ok(
      manifestProblems([...objects.filter((o) => o.kind !== 'ServiceMonitor'), broken]).includes(
        'ServiceMonitor mg: no endpoint names a port of Service mg-metrics',
      ),
    );
    // A rule that drifted from ops/prometheus/alerts.yml is reported.
    const drifted = structuredClone(rule);
    drifted.spec.groups[0].rules.pop();
    assert.ok(
      manifestProblems([...objects.filter((o) => o.kind !== 'PrometheusRule'), drifted]).includes(
        'PrometheusRule mg: its groups are not those of ops/prometheus/alerts.yml',
      ),
    );
  });
});
