// The Kubernetes chart's provider fleets, generated from the provider list (providers/index.ts):
// one worker fleet per live provider, with the roles, the role-scoped secrets its roles read
// (shared/routing.ts secretsOfRoles) and a shutdown grace that covers the provider's longest paid
// call (activities/providers/call-timeouts.ts). The chart reads the file (files/provider-fleets.yaml,
// templates/_helpers.tpl "mediagen.fleets") and lays the values' `workers.providerFleet` defaults and
// each `workers.fleets.<name>` entry over it, so a new provider needs no hand-written deploy entry.
// `npm run helm:fleets` rewrites the file; test/unit/k8s-manifests.test.ts fails when it drifts.
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { liveProviderNames } from '../../providers/index.js';
import { secretsOfRoles } from '../../shared/routing.js';
import { providerShutdownGraceMs } from '../../activities/providers/call-timeouts.js';

export const providerFleetsPath = fileURLToPath(new URL('../../../ops/helm/mediagen/files/provider-fleets.yaml', import.meta.url));
const valuesPath = fileURLToPath(new URL('../../../ops/helm/mediagen/values.yaml', import.meta.url));

/** The chart's own termination margin and Cluster Autoscaler cap: a fleet whose pod grace exceeds the cap says `safeToEvict: false`. */
function chartGraceLimits(): { marginSeconds: number; autoscalerMaxSeconds: number } {
  const workers = (parse(readFileSync(valuesPath, 'utf8')) as { workers: { terminationMarginSeconds: number; autoscalerMaxGraceSeconds: number } }).workers;
  return { marginSeconds: workers.terminationMarginSeconds, autoscalerMaxSeconds: workers.autoscalerMaxGraceSeconds };
}

/** The file's text: a YAML map of the provider fleets, in list order. */
export function providerFleetsYaml(): string {
  const { marginSeconds, autoscalerMaxSeconds } = chartGraceLimits();
  const lines = [
    '# Generated from providers/index.ts by `npm run helm:fleets` (scripts/generate/helm-provider-fleets.ts): do not edit.',
    "# One worker fleet per live provider. A fleet's own values (scaling, env, publicKeys, enabled: false)",
    '# go under workers.fleets.<name>; what every provider fleet shares, under workers.providerFleet.',
    'fleets:',
  ];
  for (const provider of liveProviderNames) {
    const role = `provider:${provider}`;
    const graceSeconds = Math.ceil(providerShutdownGraceMs([provider], 0) / 1000);
    lines.push(
      `  ${provider}:`,
      `    roles: ["${role}"]`,
      `    secrets: [${[...secretsOfRoles([role])].sort().join(', ')}]`,
      `    shutdownGraceSeconds: ${graceSeconds}`,
    );
    if (graceSeconds + marginSeconds > autoscalerMaxSeconds) lines.push('    safeToEvict: false');
  }
  return `${lines.join('\n')}\n`;
}

function main() {
  writeFileSync(providerFleetsPath, providerFleetsYaml());
  console.log(`wrote ${providerFleetsPath}`);
}

// Runs as `node dist/scripts/generate/helm-provider-fleets.js`; the test only imports it.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) main();
