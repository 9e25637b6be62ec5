// Renders the Helm chart (ops/helm/mediagen) with the pinned helm that scripts/stack.sh install
// builds, validates every object against the pinned Kubernetes, KEDA and prometheus-operator schemas
// (npm kubernetes-models, @kubernetes-models/keda, @kubernetes-models/prometheus-operator: offline),
// and checks what the schemas cannot: each fleet's termination grace against its longest provider
// call and the Cluster Autoscaler's cap, least-privilege secrets per role, one ScaledObject per fleet
// on its own task queues (with a cpu trigger and a fallback), probes, tini as PID 1, bounded /tmp,
// ingress closed to workers, migrations as a hook, the ServiceMonitor and PrometheusRule.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { ScaledObject, TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { longestCallMs, providerShutdownGraceMs, AFTER_CALL_MARGIN_MS } from '../../activities/providers/call-timeouts.js';
import type { ProviderName } from '../../shared/job-model.js';
import { roleScopedSecrets, runsMediaTools, secretsOfRoles } from '../../shared/routing.js';
import { fleetOfWorkerRole } from '../../db/fleet-roles.js';
import { storageIdentityOfRoles } from '../../shared/storage-policies.js';
import { localRenderEnv } from '../../shared/config/local-render.js';
import { taskQueues } from '../../workflows/definitions.js';
import { gatewayEnv } from '../../shared/config/gateway.js';
import { alertRules } from './ops.js';

export const root = fileURLToPath(new URL('../../../', import.meta.url));
export const chartDir = join(root, 'ops/helm/mediagen');
export const overlays = { small: join(root, 'ops/helm/values-small.yaml'), large: join(root, 'ops/helm/values-large.yaml') };

/** The helm binary: HELM, else the one scripts/stack.sh install builds (its pinned HELM_VERSION). */
export function helmBinary(): string {
  if (process.env.HELM) return process.env.HELM;
  const version = /^HELM_VERSION=(\S+)/m.exec(readFileSync(join(root, 'scripts/stack.sh'), 'utf8'))?.[1];
  const bin = join(process.env.MEDIA_GEN_CACHE ?? join(homedir(), '.cache/media-gen'), `helm-${version}`, 'helm');
  if (!existsSync(bin)) throw new Error(`helm ${version} is not installed at ${bin}: run scripts/stack.sh install`);
  return bin;
}

// A helm built with `go install` (no release ldflags) assumes Kubernetes 1.20, below the chart's
// kubeVersion: render for a current cluster instead. `helm template` reads no network.
const KUBE_VERSION = '1.32.0';

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** `helm template` of the chart with these values files and --set flags, parsed. */
export function render(valuesFiles: string[], sets: string[] = []): K8sObject[] {
  const args = ['template', 'mg', chartDir, '--kube-version', KUBE_VERSION, ...valuesFiles.flatMap((f) => ['-f', f]), ...sets.flatMap((s) => ['--set', s])];
  const out = execFileSync(helmBinary(), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return parseAllDocuments(out)
    .map((d) => {
      if (d.errors.length) throw new Error(`helm rendered invalid YAML: ${d.errors[0]!.message}`);
      return d.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}

type Validator = new (obj: any) => { validate(): void };
const validators: Record<string, Validator> = {
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'batch/v1/Job': Job,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
  'keda.sh/v1alpha1/TriggerAuthentication': TriggerAuthentication,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};

/** Schema errors, one per object that fails (or has no validator: an unchecked kind is an error too). */
export function schemaErrors(objects: K8sObject[]): string[] {
  const errors: string[] = [];
  for (const obj of objects) {
    const key = `${obj.apiVersion}/${obj.kind}`;
    const V = validators[key];
    if (!V) {
      errors.push(`${key} ${obj.metadata?.name}: no schema validator for this kind`);
      continue;
    }
    try {
      new V(obj).validate();
    } catch (err) {
      errors.push(`${key} ${obj.metadata.name}: ${(err as Error).message}`);
    }
  }
  return errors;
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}

const configVariableDefault = (name: 'MEDIA_TOOL_FILE_MB') => localRenderEnv[name].parse(undefined);
const podSpec = (o: K8sObject) => o.spec?.template?.spec ?? {};
const containers = (o: K8sObject): any[] => [...(podSpec(o).initContainers ?? []), ...(podSpec(o).containers ?? [])];
const envOf = (o: K8sObject, name: string): string | undefined =>
  containers(o)
    .flatMap((c) => (c.env ?? []) as EnvVar[])
    .find((e) => e.name === name)?.value;
const component = (o: K8sObject) => o.spec?.template?.metadata?.labels?.['app.kubernetes.io/component'] as string | undefined;
export const workerDeployments = (objects: K8sObject[]) => objects.filter((o) => o.kind === 'Deployment' && component(o) === 'worker');
export const rolesOf = (o: K8sObject) => (envOf(o, 'WORKER_ROLES') ?? '').split(',').filter(Boolean);

/** The roles a workload runs, for secretsOfRoles: a worker's WORKER_ROLES, the gateway, the admin CLI (migrations). */
function workloadRoles(o: K8sObject): string[] | undefined {
  const c = component(o);
  if (c === 'worker') return rolesOf(o);
  if (c === 'gateway') return ['gateway'];
  if (c === 'migrations') return ['admin'];
  if (c === 'codec-server') return [];
  // The rollback guard talks to Temporal only (deployment guard): no role secret at all.
  if (c === 'deployment-guard') return [];
  return undefined;
}

/**
 * Whose credentials a workload holds: the database fleets it logs in for (`gateway`, or its worker
 * roles' fleets, db/fleet-roles.ts) and its storage identity (shared/storage-policies.ts); the
 * migrations Job is the owner of both.
 */
export function credentialOwner(o: K8sObject): { db: string; s3: string } | undefined {
  const c = component(o);
  if (c === 'gateway') return { db: 'gateway', s3: 'gateway' };
  if (c === 'migrations') return { db: 'owner', s3: 'owner' };
  if (c !== 'worker') return undefined;
  const roles = rolesOf(o);
  const fleets = [...new Set(roles.map((r) => fleetOfWorkerRole(r.split(':')[0] as Parameters<typeof fleetOfWorkerRole>[0])))].sort();
  return { db: fleets.join('+'), s3: storageIdentityOfRoles(roles) };
}

/** The IAM role (IRSA) a workload's pods may assume: its ServiceAccount's eks.amazonaws.com/role-arn. */
export function iamRoleOf(objects: K8sObject[], o: K8sObject): string | undefined {
  const account = objects.find((x) => x.kind === 'ServiceAccount' && x.metadata.name === podSpec(o).serviceAccountName);
  return account?.metadata.annotations?.['eks.amazonaws.com/role-arn'];
}

/**
 * IRSA: a gateway or worker runs as its storage identity's ServiceAccount (`<release>-<identity>`)
 * or the shared fallback (`<release>-app`), and an IAM role of an identity's own account serves
 * that identity alone (the reconciler's may set the bucket lifecycle).
 */
function serviceAccountProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  const users = new Map<string, Set<string>>();
  const owned = new Set<string>();
  for (const o of objects.filter((x) => x.kind === 'Deployment' && (component(x) === 'gateway' || component(x) === 'worker'))) {
    const identity = credentialOwner(o)!.s3;
    const release = o.metadata.labels?.['app.kubernetes.io/instance'];
    const account = podSpec(o).serviceAccountName as string | undefined;
    if (account !== `${release}-app` && account !== `${release}-${identity}`)
      problems.push(`${o.metadata.name}: runs as ServiceAccount ${account}, not its storage identity's (${identity}) nor ${release}-app`);
    if (!objects.some((x) => x.kind === 'ServiceAccount' && x.metadata.name === account))
      problems.push(`${o.metadata.name}: ServiceAccount ${account} is not rendered`);
    const role = iamRoleOf(objects, o);
    if (!role) continue;
    users.set(role, (users.get(role) ?? new Set()).add(identity));
    if (account !== `${release}-app`) owned.add(role);
  }
  // The fallback's one role may serve several identities (an install from before); an identity's own may not.
  for (const role of owned) {
    const identities = users.get(role)!;
    if (identities.size > 1) problems.push(`IAM role ${role}: the storage identity of ${[...identities].sort().join(' and ')}`);
  }
  return problems;
}

/** Every Secret key a workload's pods receive: secretKeyRef keys, envFrom (all keys), volumes (their items, or all keys). */
function secretKeysReceived(o: K8sObject, secrets: Map<string, string[]>): { secret: string; key: string }[] | string {
  const out: { secret: string; key: string }[] = [];
  const allKeys = (name: string) => secrets.get(name);
  for (const c of containers(o)) {
    for (const e of (c.env ?? []) as EnvVar[]) {
      const ref = e.valueFrom?.secretKeyRef;
      if (ref) out.push({ secret: ref.name, key: ref.key });
    }
    for (const from of c.envFrom ?? []) {
      if (!from.secretRef) continue;
      const keys = allKeys(from.secretRef.name);
      if (!keys) return `envFrom Secret ${from.secretRef.name} whose keys are not known here (reference keys one by one)`;
      out.push(...keys.map((key) => ({ secret: from.secretRef.name, key })));
    }
  }
  for (const v of podSpec(o).volumes ?? []) {
    if (!v.secret) continue;
    const items = v.secret.items as { key: string }[] | undefined;
    const keys = items ? items.map((i) => i.key) : allKeys(v.secret.secretName);
    if (!keys) return `volume of Secret ${v.secret.secretName} without items, whose keys are not known here`;
    out.push(...keys.map((key) => ({ secret: v.secret.secretName, key })));
  }
  return out;
}

const portMatches = (rule: any, port: number) => !rule.ports || rule.ports.some((p: any) => p.port === port);
const selects = (policy: K8sObject, labels: Record<string, string>) =>
  Object.entries((policy.spec?.podSelector?.matchLabels ?? {}) as Record<string, string>).every(([k, v]) => labels[k] === v) &&
  !policy.spec?.podSelector?.matchExpressions;

/** What a fleet's termination grace must cover: the worker's own shutdown grace, at least its providers' longest call + margin. */
export function workerGraceNeededMs(roles: string[], configuredMs: number): number {
  const providers = roles.filter((r) => r.startsWith('provider:')).map((r) => r.slice('provider:'.length) as ProviderName);
  return providerShutdownGraceMs(providers, configuredMs);
}

/** Kubernetes needs this long after the process's own grace to let it close connections before SIGKILL. */
export const CLOSE_MARGIN_MS = 5_000;

/** The Cluster Autoscaler's default --max-graceful-termination-sec: a node scale-down kills a pod after this long. */
export const AUTOSCALER_MAX_GRACE_S = 600;
export const SAFE_TO_EVICT = 'cluster-autoscaler.kubernetes.io/safe-to-evict';

/** A Kubernetes quantity of bytes (512Mi, 10Gi, 1G, 1000) in bytes. */
export function quantityBytes(q: string | number): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(q));
  if (!m) return NaN;
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[m[2] ?? ''] ?? 1;
  return Number(m[1]) * unit;
}

/** What the pods of every Deployment and Job must hold whatever their role: tini as PID 1, a bounded /tmp, a grace the autoscaler honours. */
function podProblems(o: K8sObject): string[] {
  const problems: string[] = [];
  const name = `${o.kind} ${o.metadata.name}`;
  // `command` replaces the image's ENTRYPOINT (tini): node would be PID 1, with no zombie reaping,
  // and deaf to SIGTERM until main installs its handler. `args` replaces only CMD.
  for (const c of containers(o)) if (c.command) problems.push(`${name}: container ${c.name} sets command, which drops the image's ENTRYPOINT (tini); use args`);
  for (const v of podSpec(o).volumes ?? [])
    if (v.emptyDir && !(quantityBytes(v.emptyDir.sizeLimit) > 0)) problems.push(`${name}: emptyDir ${v.name} has no sizeLimit`);
  const grace = Number(podSpec(o).terminationGracePeriodSeconds ?? 30);
  const annotations = (o.spec?.template?.metadata?.annotations ?? {}) as Record<string, string>;
  if (o.kind === 'Deployment' && grace > AUTOSCALER_MAX_GRACE_S && annotations[SAFE_TO_EVICT] !== 'false')
    problems.push(
      `${name}: terminationGracePeriodSeconds ${grace} exceeds the Cluster Autoscaler's ${AUTOSCALER_MAX_GRACE_S} s, and its pods do not say ${SAFE_TO_EVICT}: "false"`,
    );
  return problems;
}

/** A worker's probes: on its metrics port, served on all interfaces (the kubelet calls from the node). */
function probeProblems(d: K8sObject): string[] {
  const problems: string[] = [];
  const name = d.metadata.name;
  const c = containers(d).find((x) => x.name === 'worker');
  const metricsPort = c?.ports?.find((p: any) => p.name === 'metrics')?.containerPort;
  if (String(metricsPort) !== envOf(d, 'WORKER_METRICS_PORT')) problems.push(`${name}: its metrics port is not WORKER_METRICS_PORT`);
  const host = envOf(d, 'METRICS_HOST') ?? '127.0.0.1';
  if (host.startsWith('127.') || host === 'localhost' || host === '::1')
    problems.push(`${name}: METRICS_HOST ${host} is loopback, which the kubelet's probes cannot reach`);
  const want: [string, string][] = [
    ['startupProbe', '/healthz'],
    ['livenessProbe', '/healthz'],
    ['readinessProbe', '/readyz'],
  ];
  for (const [probe, path] of want) {
    const get = c?.[probe]?.httpGet;
    if (!get) problems.push(`${name}: no ${probe}`);
    else if (get.path !== path || (get.port !== 'metrics' && get.port !== metricsPort)) problems.push(`${name}: ${probe} is not ${path} on the metrics port`);
  }
  return problems;
}

/** A media-tools fleet: a per-pod cap on tool runs, and a /tmp that holds that many runs' files at the file cap. */
function mediaToolProblems(d: K8sObject, defaultFileMb: number): string[] {
  const name = d.metadata.name;
  const concurrency = Number(envOf(d, 'MEDIA_TOOL_CONCURRENCY') ?? 0);
  if (!(concurrency >= 1)) return [`${name}: runs media tools without a MEDIA_TOOL_CONCURRENCY cap`];
  const fileMb = Number(envOf(d, 'MEDIA_TOOL_FILE_MB') ?? defaultFileMb);
  const tmp = (podSpec(d).volumes ?? []).find((v: any) => v.name === 'tmp');
  const limit = quantityBytes(tmp?.emptyDir?.sizeLimit ?? '');
  const needed = concurrency * 2 * fileMb * 2 ** 20;
  if (fileMb === 0 || !(limit >= needed))
    return [`${name}: /tmp sizeLimit ${tmp?.emptyDir?.sizeLimit} is below MEDIA_TOOL_CONCURRENCY ${concurrency} × 2 × MEDIA_TOOL_FILE_MB ${fileMb}`];
  return [];
}

/** A fleet's ScaledObject scales on more than its backlog, and holds its size when the backlog cannot be read. */
function scalerProblems(name: string, so: K8sObject, d: K8sObject): string[] {
  const problems: string[] = [];
  const triggers = (so.spec.triggers ?? []) as { type: string; metricType?: string; metadata: Record<string, string> }[];
  if (!triggers.some((t) => t.type !== 'temporal')) problems.push(`${name}: its ScaledObject scales on the backlog alone`);
  const fallback = so.spec.fallback;
  if (!fallback) problems.push(`${name}: its ScaledObject has no fallback for a backlog it cannot read`);
  else {
    // KEDA (2.17+) admits a fallback only with a trigger other than cpu/memory of type AverageValue.
    if (!triggers.some((t) => t.type !== 'cpu' && t.type !== 'memory' && (t.metricType ?? 'AverageValue') === 'AverageValue'))
      problems.push(`${name}: its fallback has no AverageValue trigger to apply to`);
    if (fallback.replicas < (so.spec.minReplicaCount ?? 0)) problems.push(`${name}: its fallback replicas are below its minReplicaCount`);
  }
  if (triggers.some((t) => t.type === 'cpu') && !containers(d).every((c) => c.resources?.requests?.cpu))
    problems.push(`${name}: a cpu trigger, but its containers request no CPU`);
  return problems;
}

/** Everything wrong with a rendered release beyond the schemas; empty when it is right. */
export function manifestProblems(objects: K8sObject[]): string[] {
  const problems: string[] = objects.filter((o) => o.kind === 'Deployment' || o.kind === 'Job').flatMap(podProblems);
  const secrets = new Map(objects.filter((o) => o.kind === 'Secret').map((s) => [s.metadata.name, Object.keys({ ...s.data, ...s.stringData })]));
  const scaledObjects = objects.filter((o) => o.kind === 'ScaledObject');
  const policies = objects.filter((o) => o.kind === 'NetworkPolicy' && (o.spec?.policyTypes ?? []).includes('Ingress'));
  const workers = workerDeployments(objects);
  if (workers.length === 0) problems.push('no worker Deployment rendered');

  for (const d of workers) {
    const name = d.metadata.name;
    const roles = rolesOf(d);
    const providers = roles.filter((r) => r.startsWith('provider:')).map((r) => r.slice('provider:'.length) as ProviderName);
    const configured = Number(envOf(d, 'WORKER_SHUTDOWN_GRACE_MS') ?? 30_000);
    const longest = Math.max(0, ...providers.map((p) => longestCallMs[p]));
    // The worker's own grace must already cover the call (the process would otherwise run longer than configured).
    if (longest > 0 && configured < longest + AFTER_CALL_MARGIN_MS)
      problems.push(`${name}: WORKER_SHUTDOWN_GRACE_MS ${configured} is below its longest provider call ${longest} ms + ${AFTER_CALL_MARGIN_MS} ms`);
    const needed = workerGraceNeededMs(roles, configured) + CLOSE_MARGIN_MS;
    const grace = Number(podSpec(d).terminationGracePeriodSeconds ?? 30) * 1000;
    if (grace < needed)
      problems.push(
        `${name}: terminationGracePeriodSeconds ${grace / 1000} is below the ${needed / 1000} s its roles (${roles.join(',')}) need to finish a provider call`,
      );

    // Autoscaled on the backlog of its own queues, for its own Worker Deployment Version.
    const prefix = envOf(d, 'TASK_QUEUE_PREFIX') ?? 'media';
    const q = taskQueues(prefix);
    const expected = roles.flatMap((r) =>
      r === 'workflows'
        ? [`${q.workflows}/workflow`]
        : r === 'io'
          ? [`${q.io}/activity`]
          : r === 'fetch'
            ? [`${q.fetch}/activity`]
            : r === 'webhooks'
              ? [`${q.webhooks}/activity`]
              : r.startsWith('provider:')
                ? [
                    `${q.provider(r.slice('provider:'.length) as ProviderName)}/activity`,
                    `${q.providerWaits(r.slice('provider:'.length) as ProviderName)}/activity`,
                  ]
                : [],
    );
    problems.push(...probeProblems(d));
    if (runsMediaTools(roles)) problems.push(...mediaToolProblems(d, configVariableDefault('MEDIA_TOOL_FILE_MB')));
    const so = scaledObjects.find((s) => s.spec?.scaleTargetRef?.name === name);
    if (!so) problems.push(`${name}: no ScaledObject scales it`);
    else {
      problems.push(...scalerProblems(name, so, d));
      const triggers = (so.spec.triggers ?? []) as { type: string; metadata: Record<string, string> }[];
      const got = triggers.filter((t) => t.type === 'temporal').map((t) => `${t.metadata.taskQueue}/${t.metadata.queueTypes}`);
      if (got.sort().join(' ') !== expected.sort().join(' '))
        problems.push(`${name}: its ScaledObject watches ${got.join(', ') || 'nothing'}, its roles poll ${expected.join(', ')}`);
      for (const t of triggers.filter((x) => x.type === 'temporal')) {
        if (t.metadata.workerDeploymentName !== envOf(d, 'WORKER_DEPLOYMENT_NAME') || t.metadata.workerDeploymentBuildId !== envOf(d, 'WORKER_BUILD_ID'))
          problems.push(`${name}: its ScaledObject reads another Worker Deployment Version than the one it polls as`);
        if (t.metadata.endpoint !== envOf(d, 'TEMPORAL_ADDRESS') || t.metadata.namespace !== envOf(d, 'TEMPORAL_NAMESPACE'))
          problems.push(`${name}: its ScaledObject asks another Temporal endpoint or namespace than the worker polls`);
      }
    }

    // Workers accept no connection: ingress denied, nothing but /metrics (when scraped) let in.
    const labels = d.spec.template.metadata.labels as Record<string, string>;
    const mine = policies.filter((p) => selects(p, labels));
    if (mine.length === 0) problems.push(`${name}: no NetworkPolicy restricts ingress to its pods`);
    const metricsPort = Number(envOf(d, 'WORKER_METRICS_PORT'));
    for (const p of mine)
      for (const rule of p.spec.ingress ?? [])
        if (!rule.ports || rule.ports.some((port: any) => port.port !== metricsPort))
          problems.push(`${name}: NetworkPolicy ${p.metadata.name} lets connections in beyond its metrics port`);
  }

  const gateways = objects.filter((o) => o.kind === 'Deployment' && component(o) === 'gateway');
  if (gateways.length !== 1) problems.push(`expected one gateway Deployment, found ${gateways.length}`);
  for (const g of gateways) {
    const c = containers(g)[0];
    const preStop = c?.lifecycle?.preStop?.exec?.command as string[] | undefined;
    const preStopMs = preStop?.[0] === 'sleep' ? Number(preStop[1]) * 1000 : 0;
    const drainMs = Number(envOf(g, 'SSE_DRAIN_TIMEOUT_MS') ?? gatewayEnv.SSE_DRAIN_TIMEOUT_MS.parse(undefined));
    const stopGraceMs = Number(envOf(g, 'GATEWAY_SHUTDOWN_GRACE_MS') ?? gatewayEnv.GATEWAY_SHUTDOWN_GRACE_MS.parse(undefined));
    const requestMs = Number(envOf(g, 'GATEWAY_REQUEST_TIMEOUT_MS') ?? gatewayEnv.GATEWAY_REQUEST_TIMEOUT_MS.parse(undefined));
    if (stopGraceMs < requestMs)
      problems.push(`${g.metadata.name}: GATEWAY_SHUTDOWN_GRACE_MS ${stopGraceMs} is below the longest request, GATEWAY_REQUEST_TIMEOUT_MS ${requestMs}`);
    const needed = preStopMs + stopGraceMs + drainMs;
    const grace = Number(podSpec(g).terminationGracePeriodSeconds ?? 30) * 1000;
    if (grace < needed)
      problems.push(
        `${g.metadata.name}: terminationGracePeriodSeconds ${grace / 1000} is below preStop ${preStopMs / 1000} s + the gateway's stop grace ${stopGraceMs / 1000} s + stream drain ${drainMs / 1000} s`,
      );
    if (c?.readinessProbe?.httpGet?.path !== '/readyz') problems.push(`${g.metadata.name}: readiness is not /readyz`);
    if (c?.livenessProbe?.httpGet?.path !== '/healthz') problems.push(`${g.metadata.name}: liveness is not /healthz`);
    const port = Number(c?.ports?.find((p: any) => p.name === 'http')?.containerPort);
    const labels = g.spec.template.metadata.labels as Record<string, string>;
    if (!policies.some((p) => selects(p, labels) && (p.spec.ingress ?? []).some((r: any) => portMatches(r, port))))
      problems.push(`${g.metadata.name}: no NetworkPolicy lets clients reach its port ${port}`);
    if (!objects.some((o) => o.kind === 'PodDisruptionBudget' && selects({ ...o, spec: { podSelector: o.spec.selector } }, labels)))
      problems.push(`${g.metadata.name}: no PodDisruptionBudget`);
    if (!objects.some((o) => o.kind === 'HorizontalPodAutoscaler' && o.spec.scaleTargetRef?.name === g.metadata.name))
      problems.push(`${g.metadata.name}: no HorizontalPodAutoscaler`);
  }

  // Least privilege: a workload receives no role-scoped secret its roles do not read, and the
  // schema owner's database URL only in the migrations Job.
  const scoped = new Set<string>(roleScopedSecrets);
  const credentialUsers = new Map<string, Set<string>>();
  for (const o of objects.filter((x) => x.kind === 'Deployment' || x.kind === 'Job')) {
    const roles = workloadRoles(o);
    if (!roles) {
      problems.push(`${o.kind} ${o.metadata.name}: unknown component, its secrets cannot be checked`);
      continue;
    }
    const allowed = new Set<string>(secretsOfRoles(roles));
    const received = secretKeysReceived(o, secrets);
    if (typeof received === 'string') {
      problems.push(`${o.kind} ${o.metadata.name}: ${received}`);
      continue;
    }
    const referencedSecrets = new Set(received.map((r) => r.secret));
    const keys = new Set([...received.map((r) => r.key), ...[...referencedSecrets].flatMap((s) => secrets.get(s) ?? [])]);
    for (const key of keys)
      if (scoped.has(key) && !allowed.has(key))
        problems.push(`${o.kind} ${o.metadata.name}: receives ${key}, which its roles (${roles.join(',')}) do not read`);
    for (const need of allowed) if (!keys.has(need)) problems.push(`${o.kind} ${o.metadata.name}: lacks ${need}, which its roles read`);
    const owner = [...referencedSecrets].some((s) => s.endsWith('-db-migrate'));
    if (owner !== (component(o) === 'migrations'))
      problems.push(`${o.kind} ${o.metadata.name}: ${owner ? 'receives' : 'lacks'} the schema owner's DATABASE_URL`);
    // Credentials: whose Secret serves each workload's DATABASE_URL and S3 keys (checked below).
    const holder = credentialOwner(o);
    for (const r of holder ? received : []) {
      const kind = r.key === 'DATABASE_URL' ? 'db' : r.key === 'S3_ACCESS_KEY' || r.key === 'S3_SECRET_KEY' ? 's3' : undefined;
      if (kind) credentialUsers.set(`${kind} ${r.secret}`, (credentialUsers.get(`${kind} ${r.secret}`) ?? new Set()).add(holder![kind]));
    }
  }
  // A fleet's database Secret and an identity's storage Secret serve that fleet or identity alone:
  // only the one app Secret (`-db-app`) and the one set of storage keys (`-s3`), the fallback of an
  // install without per-fleet credentials, may be shared.
  for (const [ref, users] of credentialUsers) {
    const [kind, secret] = ref.split(' ') as ['db' | 's3', string];
    const shared = kind === 'db' ? secret.endsWith('-db-app') : secret.endsWith('-s3');
    if (users.size > 1 && !shared)
      problems.push(`Secret ${secret}: the ${kind === 'db' ? 'database role' : 'storage identity'} of ${[...users].sort().join(' and ')}`);
  }

  // The rollback guard: before every upgrade and rollback (its secrets are checked above: no role's).
  const guards = objects.filter((o) => o.kind === 'Job' && component(o) === 'deployment-guard');
  for (const g of guards) {
    const hooks = (g.metadata.annotations?.['helm.sh/hook'] ?? '').split(',');
    if (!hooks.includes('pre-upgrade') || !hooks.includes('pre-rollback')) problems.push(`Job ${g.metadata.name}: not a pre-upgrade/pre-rollback hook`);
  }
  const jobs = objects.filter((o) => o.kind === 'Job' && component(o) === 'migrations');
  if (jobs.length !== 1) problems.push(`expected one migrations Job, found ${jobs.length}`);
  for (const j of jobs) {
    const hooks = (j.metadata.annotations?.['helm.sh/hook'] ?? '').split(',');
    if (!hooks.includes('pre-install') || !hooks.includes('pre-upgrade')) problems.push(`Job ${j.metadata.name}: not a pre-install/pre-upgrade hook`);
    const weight = Number(j.metadata.annotations?.['helm.sh/hook-weight'] ?? 0);
    // What the Job mounts or reads, when the chart writes it, must be a hook that runs first.
    const received = secretKeysReceived(j, secrets);
    for (const s of typeof received === 'string' ? [] : new Set(received.map((r) => r.secret))) {
      const secret = objects.find((o) => o.kind === 'Secret' && o.metadata.name === s);
      if (secret && !(Number(secret.metadata.annotations?.['helm.sh/hook-weight'] ?? 0) < weight && secret.metadata.annotations?.['helm.sh/hook']))
        problems.push(`Secret ${s}: the migrations Job reads it, but it is not created before the Job`);
    }
  }
  problems.push(...serviceAccountProblems(objects));
  problems.push(...monitoringProblems(objects));
  return problems;
}

/**
 * The Prometheus Operator objects, when rendered: the ServiceMonitor's Service reaches every gateway
 * and worker pod on its named metrics port, and the PrometheusRule holds ops/prometheus/alerts.yml.
 */
function monitoringProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  for (const sm of objects.filter((o) => o.kind === 'ServiceMonitor')) {
    const wanted = (sm.spec.selector?.matchLabels ?? {}) as Record<string, string>;
    const services = objects.filter((o) => o.kind === 'Service' && Object.entries(wanted).every(([k, v]) => o.metadata.labels?.[k] === v));
    if (services.length !== 1) {
      problems.push(`ServiceMonitor ${sm.metadata.name}: selects ${services.length} Services`);
      continue;
    }
    const svc = services[0]!;
    const port = (svc.spec.ports as any[]).find((p) => (sm.spec.endpoints as any[]).some((e) => e.port === p.name));
    if (!port) problems.push(`ServiceMonitor ${sm.metadata.name}: no endpoint names a port of Service ${svc.metadata.name}`);
    const scraped = objects.filter((o) => o.kind === 'Deployment' && (component(o) === 'gateway' || component(o) === 'worker'));
    for (const d of scraped) {
      const labels = d.spec.template.metadata.labels as Record<string, string>;
      const selected = Object.entries(svc.spec.selector as Record<string, string>).every(([k, v]) => labels[k] === v);
      const named = containers(d).some((c) => (c.ports ?? []).some((p: any) => p.name === port?.targetPort));
      if (!selected || !named) problems.push(`ServiceMonitor ${sm.metadata.name}: does not reach ${d.metadata.name}'s metrics port`);
    }
  }
  for (const rule of objects.filter((o) => o.kind === 'PrometheusRule'))
    if (!isDeepStrictEqual(rule.spec.groups, alertRules().groups))
      problems.push(`PrometheusRule ${rule.metadata.name}: its groups are not those of ops/prometheus/alerts.yml`);
  return problems;
}
