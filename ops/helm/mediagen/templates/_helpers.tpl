{{/* Names: every object is `<release>-<part>`. */}}
{{- define "mediagen.name" -}}{{ .Release.Name }}{{- end }}

{{- define "mediagen.labels" -}}
app.kubernetes.io/name: mediagen
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}

{{- define "mediagen.selectorLabels" -}}
app.kubernetes.io/name: mediagen
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The build the gateways and the migrations Job run: the one marked current (exactly one). */}}
{{- define "mediagen.currentBuild" -}}
{{- $current := list -}}
{{- range .Values.builds }}{{ if .current }}{{ $current = append $current . }}{{ end }}{{ end -}}
{{- if ne (len $current) 1 -}}
{{- fail (printf "builds: exactly one build must be current (found %d)" (len $current)) -}}
{{- end -}}
{{- toYaml (first $current) -}}
{{- end }}

{{/* A build id names Kubernetes objects and labels: a DNS label. */}}
{{- define "mediagen.checkBuildId" -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$" (toString .)) -}}
{{- fail (printf "builds: id %q must be a DNS label of at most 40 characters (lower-case letters, digits, -)" (toString .)) -}}
{{- end -}}
{{- end }}

{{/*
The task queues a fleet's roles poll, as "queue type" pairs (workflows/definitions.ts taskQueues:
the workflows role polls workflow tasks only, its Postgres steps run as local activities; the
reconciler polls no queue). Argument: dict "roles" "prefix".
*/}}
{{- define "mediagen.queues" -}}
{{- $out := list -}}
{{- range .roles -}}
{{- if eq . "workflows" }}{{ $out = append $out (dict "name" (printf "%s-workflows" $.prefix) "type" "workflow") }}
{{- else if eq . "io" }}{{ $out = append $out (dict "name" (printf "%s-io" $.prefix) "type" "activity") }}
{{- else if eq . "fetch" }}{{ $out = append $out (dict "name" (printf "%s-fetch" $.prefix) "type" "activity") }}
{{- else if eq . "webhooks" }}{{ $out = append $out (dict "name" (printf "%s-webhooks" $.prefix) "type" "activity") }}
{{- else if hasPrefix "provider:" . }}{{ $out = append $out (dict "name" (printf "%s-provider-%s" $.prefix (trimPrefix "provider:" .)) "type" "activity") }}{{ $out = append $out (dict "name" (printf "%s-provider-%s-waits" $.prefix (trimPrefix "provider:" .)) "type" "activity") }}
{{- else if ne . "reconciler" }}{{ fail (printf "workers: unknown role %q" .) }}
{{- end -}}
{{- end -}}
{{- toYaml (dict "queues" $out) -}}
{{- end }}

{{/*
The worker fleets: workers.fleets, plus one fleet per live provider from files/provider-fleets.yaml
(generated from the provider list by `npm run helm:fleets`). A provider fleet is its generated entry
(roles, secrets, shutdown grace) with workers.providerFleet (what every provider fleet shares; its
`concurrency` becomes PROVIDER_CONCURRENCY for each provider the fleet runs) and then its own
workers.fleets.<name> entry laid over it. Returned as YAML: {fleets: {<name>: {...}}}.
*/}}
{{- define "mediagen.fleets" -}}
{{- $w := .Values.workers -}}
{{- $out := dict -}}
{{- range $name, $generated := (.Files.Get "files/provider-fleets.yaml" | fromYaml).fleets -}}
{{- $own := deepCopy (default dict (get $w.fleets $name)) -}}
{{- $f := mergeOverwrite (deepCopy $generated) (deepCopy (default dict $w.providerFleet)) $own -}}
{{- /* false is a value of its own here, which a merge would skip over. */ -}}
{{- range $key := list "enabled" "safeToEvict" }}{{ if hasKey $own $key }}{{ $_ := set $f $key (get $own $key) }}{{ end }}{{ end -}}
{{- with $f.concurrency -}}
{{- $pairs := list -}}
{{- range $f.roles }}{{ if hasPrefix "provider:" . }}{{ $pairs = append $pairs (printf "%s=%v" (trimPrefix "provider:" .) $f.concurrency) }}{{ end }}{{ end -}}
{{- $env := default dict $f.env -}}
{{- if not (hasKey $env "PROVIDER_CONCURRENCY") }}{{ $_ := set $env "PROVIDER_CONCURRENCY" (join "," $pairs) }}{{ end -}}
{{- $_ := set $f "env" $env -}}
{{- end -}}
{{- $_ := unset $f "concurrency" -}}
{{- $_ := set $out $name $f -}}
{{- end -}}
{{- range $name, $f := $w.fleets }}{{ if not (hasKey $out $name) }}{{ $_ := set $out $name $f }}{{ end }}{{ end -}}
{{- toYaml (dict "fleets" $out) -}}
{{- end }}

{{/* Variables every gateway and worker reads (no secret values: those come from secretKeyRef);
its credentials come from mediagen.fleetEnv. */}}
{{/*
The names of the provider keys set on the provider fleets (never their values), comma-joined. Every
process routes on them (PROVIDER_KEYS_SET, shared/routing.ts): the gateways quote creates, the core
fleet quotes pipeline steps and batch items, the provider fleets' route probes see which routes are live.
*/}}
{{- define "mediagen.providerKeysSet" -}}
{{- $keysSet := list -}}
{{- range $fleet, $f := (include "mediagen.fleets" . | fromYaml).fleets -}}
{{- if and (ne $f.enabled false) (gt (len (default list $f.secrets)) 0) -}}
{{- range $f.roles }}{{ if hasPrefix "provider:" . }}{{ $keysSet = concat $keysSet (default list $f.secrets) (keys (default dict $f.publicKeys) | sortAlpha) }}{{ end }}{{ end -}}
{{- end -}}
{{- end -}}
{{- $keysSet | uniq | sortAlpha | join "," -}}
{{- end }}

{{- define "mediagen.appEnv" -}}
{{- range $k, $v := .Values.env }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
- name: PROVIDER_KEYS_SET
  value: {{ include "mediagen.providerKeysSet" . | quote }}
- name: TEMPORAL_ADDRESS
  value: {{ .Values.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
- name: TASK_QUEUE_PREFIX
  value: {{ .Values.taskQueuePrefix | quote }}
{{- if .Values.temporal.tls.enabled }}
- name: TEMPORAL_TLS
  value: "true"
- name: TEMPORAL_TLS_CA_FILE
  value: /etc/mediagen/temporal-tls/ca.pem
{{- if .Values.temporal.tls.clientCertificate }}
- name: TEMPORAL_TLS_CERT_FILE
  value: /etc/mediagen/temporal-tls/client.pem
- name: TEMPORAL_TLS_KEY_FILE
  value: /etc/mediagen/temporal-tls/client.key
{{- end }}
{{- with .Values.temporal.tls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- if .Values.temporal.apiKey.enabled }}
- name: TEMPORAL_API_KEY_FILE
  value: /etc/mediagen/temporal-api-key/api-key
{{- end }}
{{- if .Values.payloadCodec.enabled }}
- name: PAYLOAD_CODEC_KEYS_FILE
  value: /etc/mediagen/codec/keys
- name: PAYLOAD_CODEC_KEY_ID
  value: {{ .Values.payloadCodec.keyId | quote }}
{{- end }}
{{- end }}

{{/*
The storage identity of a workload (shared/storage-policies.ts): the gateway's, the reconciler's for
the fleet that runs the reconciler (the one that sets the bucket lifecycle), the worker's for any
other. Argument: dict "fleet" ("gateway" or a workers.fleets key) "roles".
*/}}
{{- define "mediagen.storageIdentity" -}}
{{- if eq .fleet "gateway" }}gateway{{ else if has "reconciler" .roles }}reconciler{{ else }}worker{{ end -}}
{{- end }}

{{/*
The ServiceAccount a workload runs as, from its storage identity: `<release>-<identity>` when
s3.roleArns names that identity's IAM role (s3.auth irsa), else `<release>-app` (s3.roleArn).
Argument: dict "root" "fleet" "roles", as mediagen.storageIdentity.
*/}}
{{- define "mediagen.serviceAccount" -}}
{{- $identity := include "mediagen.storageIdentity" . -}}
{{- if get (default dict .root.Values.s3.roleArns) $identity }}{{ .root.Release.Name }}-{{ $identity }}{{ else }}{{ .root.Release.Name }}-app{{ end -}}
{{- end }}

{{/* The Secret holding a fleet's DATABASE_URL: database.fleetSecrets.<fleet>, else the one app role's. */}}
{{- define "mediagen.dbSecret" -}}
{{- default (printf "%s-db-app" .root.Release.Name) (get (default dict .root.Values.database.fleetSecrets) .fleet) -}}
{{- end }}

{{/* The Secret holding a storage identity's keys: s3.identitySecrets.<identity>, else the one set of keys. */}}
{{- define "mediagen.s3Secret" -}}
{{- default (printf "%s-s3" .root.Release.Name) (get (default dict .root.Values.s3.identitySecrets) .identity) -}}
{{- end }}

{{/* A gateway's or worker's credentials: its fleet's database role and its storage identity only. Argument: dict "root" "fleet" "roles". */}}
{{- define "mediagen.fleetEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "mediagen.dbSecret" . }}
      key: DATABASE_URL
{{ include "mediagen.s3Env" (dict "root" .root "identity" (include "mediagen.storageIdentity" .)) }}
{{- end }}

{{/* DATABASE_URL from the given Secret (db-app: the app role; db-migrate: the owner); the URL names the CA file (sslrootcert=/etc/mediagen/db-ca/ca.pem). */}}
{{- define "mediagen.dbEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .root.Release.Name }}-{{ .secret }}
      key: DATABASE_URL
{{- end }}

{{/*
S3 settings and keys. Argument: dict "root" "identity" (gateway, worker, reconciler: that identity's
Secret; "": the migrations Job, whose seed writes the catalog's media with `<release>-s3`).
*/}}
{{- define "mediagen.s3Env" -}}
{{- $root := .root -}}
{{- with $root -}}
- name: S3_ENDPOINT
  value: {{ .Values.s3.endpoint | quote }}
- name: S3_REGION
  value: {{ .Values.s3.region | quote }}
- name: S3_BUCKET
  value: {{ .Values.s3.bucket | quote }}
- name: S3_PATH_STYLE
  value: {{ .Values.s3.pathStyle | toString | quote }}
{{- with .Values.s3.presignEndpoint }}
- name: S3_PRESIGN_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- if eq .Values.s3.auth "static" }}
{{- $keys := ternary (printf "%s-s3" .Release.Name) (include "mediagen.s3Secret" (dict "root" $root "identity" $.identity)) (eq $.identity "") }}
- name: S3_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $keys }}
      key: S3_ACCESS_KEY
- name: S3_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $keys }}
      key: S3_SECRET_KEY
{{- if .Values.s3.identitySecrets }}
{{- /* The identities' secret keys differ: one key of the job media prefixes for every process. */}}
- name: S3_MEDIA_PREFIX_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ .Release.Name }}-s3
      key: S3_MEDIA_PREFIX_SECRET
{{- end }}
{{- else if eq .Values.s3.auth "irsa" }}
{{- if .Values.s3.identitySecrets }}
{{- fail "s3.identitySecrets: static keys per identity need s3.auth static (with irsa every pod has the service account's role)" }}
{{- end }}
{{- /* Chain credentials rotate, so the media prefix token has a key of its own. */}}
- name: S3_MEDIA_PREFIX_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ .Release.Name }}-s3
      key: S3_MEDIA_PREFIX_SECRET
{{- else }}
{{- fail (printf "s3.auth must be irsa or static, not %q" .Values.s3.auth) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The Temporal and codec material as files. Argument: dict "root" "temporal" (bool) "codec" (bool) "db" (bool). */}}
{{- define "mediagen.fileMounts" -}}
{{- $v := .root.Values -}}
{{- if and .temporal $v.temporal.tls.enabled }}
- name: temporal-tls
  mountPath: /etc/mediagen/temporal-tls
  readOnly: true
{{- end }}
{{- if and .temporal $v.temporal.apiKey.enabled }}
- name: temporal-api-key
  mountPath: /etc/mediagen/temporal-api-key
  readOnly: true
{{- end }}
{{- if and .codec $v.payloadCodec.enabled }}
- name: codec-keys
  mountPath: /etc/mediagen/codec
  readOnly: true
{{- end }}
{{- if and .db $v.database.caFile }}
- name: db-ca
  mountPath: /etc/mediagen/db-ca
  readOnly: true
{{- end }}
{{- end }}

{{- define "mediagen.fileVolumes" -}}
{{- $v := .root.Values -}}
{{- $name := .root.Release.Name -}}
{{- if and .temporal $v.temporal.tls.enabled }}
- name: temporal-tls
  secret:
    secretName: {{ $name }}-temporal-tls
    defaultMode: 0440
    items:
      - key: ca.pem
        path: ca.pem
      {{- if $v.temporal.tls.clientCertificate }}
      - key: client.pem
        path: client.pem
      - key: client.key
        path: client.key
      {{- end }}
{{- end }}
{{- if and .temporal $v.temporal.apiKey.enabled }}
- name: temporal-api-key
  secret:
    secretName: {{ $name }}-temporal-api-key
    defaultMode: 0440
    items:
      - key: api-key
        path: api-key
{{- end }}
{{- if and .codec $v.payloadCodec.enabled }}
- name: codec-keys
  secret:
    secretName: {{ $name }}-codec-keys
    defaultMode: 0440
    items:
      - key: keys
        path: keys
{{- end }}
{{- if and .db $v.database.caFile }}
- name: db-ca
  secret:
    secretName: {{ $name }}-db-ca
    defaultMode: 0444
    items:
      - key: ca.pem
        path: ca.pem
{{- end }}
{{- end }}

{{/* Role-scoped secrets, one secretKeyRef per name from the fleet's own Secret. */}}
{{- define "mediagen.roleSecretEnv" -}}
{{- $secret := .secret -}}
{{- range .names }}
- name: {{ . }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ . }}
{{- end }}
{{- end }}

{{- define "mediagen.podSecurity" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 1000
  runAsGroup: 1000
  fsGroup: 1000
  seccompProfile:
    type: RuntimeDefault
{{- end }}

{{/*
The worker roles that run media tools: shared/routing.ts mediaToolRoles (test/unit/k8s-manifests.test.ts
holds the two equal). Renders "true" when any of .roles is one of them.
*/}}
{{- define "mediagen.runsMediaTools" -}}
{{- $tools := list "io" "provider:fal" "provider:alibaba" "provider:local" -}}
{{- range .roles }}{{ if has . $tools }}true{{ break }}{{ end }}{{ end -}}
{{- end }}

{{/* A worker that makes the media sandbox (docs/operations/media-sandbox.md): root with the six capabilities it needs, nothing else. */}}
{{- define "mediagen.sandboxPodSecurity" -}}
securityContext:
  runAsNonRoot: false
  runAsUser: 0
  runAsGroup: 0
  fsGroup: 1000
  seccompProfile:
    type: RuntimeDefault
{{- end }}

{{- define "mediagen.sandboxContainerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
    add: [CHOWN, DAC_OVERRIDE, FOWNER, SETUID, SETGID, SYS_ADMIN]
{{- end }}

{{- define "mediagen.containerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
{{- end }}

{{/* A writable /tmp (the root filesystem is read-only): ffmpeg's and the uploads' scratch files. Argument: its sizeLimit (the kubelet evicts a pod past it, before the node's disk fills). */}}
{{- define "mediagen.tmpMount" -}}
- name: tmp
  mountPath: /tmp
{{- end }}
{{- define "mediagen.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ required "a sizeLimit for /tmp" . }}
{{- end }}
