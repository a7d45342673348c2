{{/* Name of the chart, or nameOverride. */}}
{{- define "ops-server.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Prefix of every resource name: fullnameOverride, else the release name when
it already contains the chart name, else "<release>-<chart>". Kept at most 45
characters so that "<fullname>-source-controller" still fits 63.
*/}}
{{- define "ops-server.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 45 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 45 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 45 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "ops-server.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "ops-server.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ops-server
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels of a component: (dict "root" . "component" "server"). */}}
{{- define "ops-server.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ops-server.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Labels of a component's objects. */}}
{{- define "ops-server.componentLabels" -}}
{{ include "ops-server.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Namespace of the vmclusters (and of the Flux objects the sidecars reconcile). */}}
{{- define "ops-server.vmclusterNamespace" -}}
{{- default .Release.Namespace .Values.vmclusterNamespace }}
{{- end }}

{{/* Namespaces of ops-operator's Jobs and pod logs, as a JSON array:
operator.managedNamespaces, or the vmcluster namespace and observability. */}}
{{- define "ops-server.operatorManagedNamespaces" -}}
{{- $ns := .Values.operator.managedNamespaces -}}
{{- if not $ns -}}
{{- $ns = list (include "ops-server.vmclusterNamespace" .) "observability" -}}
{{- end -}}
{{- $ns | uniq | toJson -}}
{{- end }}

{{- define "ops-server.serverServiceAccountName" -}}
{{- if .Values.apiserver.serviceAccount.create }}
{{- default (include "ops-server.fullname" .) .Values.apiserver.serviceAccount.name }}
{{- else }}
{{- required "apiserver.serviceAccount.name is required when apiserver.serviceAccount.create is false" .Values.apiserver.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "ops-server.operatorServiceAccountName" -}}
{{- if .Values.operator.serviceAccount.create }}
{{- default (printf "%s-operator" (include "ops-server.fullname" .)) .Values.operator.serviceAccount.name }}
{{- else }}
{{- required "operator.serviceAccount.name is required when operator.serviceAccount.create is false" .Values.operator.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* An image reference: (dict "image" .Values.x.image "default" "tag"). */}}
{{- define "ops-server.image" -}}
{{- if .image.digest }}
{{- printf "%s@%s" .image.repository .image.digest }}
{{- else }}
{{- printf "%s:%s" .image.repository (default .default .image.tag) }}
{{- end }}
{{- end }}

{{/* The restricted container security context every container runs with. */}}
{{- define "ops-server.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: {{ .uid }}
runAsGroup: {{ .uid }}
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The Pod security context of both Deployments. */}}
{{- define "ops-server.podSecurityContext" -}}
runAsNonRoot: true
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
The flags both Flux controllers share. The flags themselves match operator/testenv/flux.go (StartFlux
and FluxArgs): e2e/deploy checks it.
*/}}
{{- define "ops-server.fluxCommonArgs" -}}
- --watch-all-namespaces={{ .Values.flux.watchAllNamespaces }}
{{- with .Values.flux.shard }}
- --watch-label-selector=sharding.fluxcd.io/key={{ . }}
{{- end }}
- --requeue-dependency={{ .Values.flux.requeueDependency }}
{{- with .Values.flux.leaderElection }}
- --enable-leader-election={{ .enabled }}
{{- if .enabled }}
- --leader-election-lease-duration={{ .leaseDuration }}
- --leader-election-renew-deadline={{ .renewDeadline }}
- --leader-election-retry-period={{ .retryPeriod }}
{{- end }}
{{- end }}
- --log-level={{ .Values.flux.logLevel }}
- --log-encoding={{ .Values.flux.logEncoding }}
{{- end }}

{{/* Env of both Flux controllers: the namespace they watch. */}}
{{/*
The Go runtime's soft memory limit, from the container's memory limit
(every container of the chart runs a Go binary): the garbage collector
works harder as the heap nears the limit instead of the kernel killing
the container (docs/install.md, "Memory" under "Sizing"). The argument is the container
name.
*/}}
{{- define "ops-server.goMemLimit" -}}
- name: GOMEMLIMIT
  valueFrom:
    resourceFieldRef:
      containerName: {{ . }}
      resource: limits.memory
{{- end }}

{{- define "ops-server.fluxEnv" -}}
{{- if .Values.vmclusterNamespace }}
- name: RUNTIME_NAMESPACE
  value: {{ .Values.vmclusterNamespace | quote }}
{{- else }}
- name: RUNTIME_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end }}
{{- end }}

{{/*
Cloud flags both ops-apiserver and ops-operator take (docs/providers): the
providers' configuration file and the simulated cloud.
*/}}
{{- define "ops-server.cloudArgs" -}}
{{- if .Values.cloud.config }}
- --cloud-config=/etc/ops-server/cloud/cloud.yaml
{{- end }}
{{- if .Values.cloud.mock.enabled }}
- --enable-mock-cloud=true
- --mock-namespace={{ .Values.cloud.mock.namespace }}
{{- end }}
{{- end }}

{{/* Volume mounts of the cloud configuration and credentials. */}}
{{- define "ops-server.cloudVolumeMounts" -}}
{{- if .Values.cloud.config }}
- name: cloud-config
  mountPath: /etc/ops-server/cloud
  readOnly: true
{{- end }}
{{- range $i, $s := .Values.cloud.credentialsSecrets }}
- name: cloud-credentials-{{ $i }}
  mountPath: {{ $s.mountPath }}
  readOnly: true
{{- end }}
{{- end }}

{{/* Volumes of the cloud configuration and credentials. */}}
{{- define "ops-server.cloudVolumes" -}}
{{- if .Values.cloud.config }}
- name: cloud-config
  configMap:
    name: {{ include "ops-server.fullname" . }}-cloud
{{- end }}
{{- range $i, $s := .Values.cloud.credentialsSecrets }}
- name: cloud-credentials-{{ $i }}
  secret:
    secretName: {{ $s.name }}
    defaultMode: 0440
{{- end }}
{{- end }}

{{/*
The cluster-scoped kinds the catalog's charts render (rbac-server.yaml,
helm-controller-charts-cluster), as RBAC rules; empty: none. The vmcluster
and vmagent charts render none, vm-operator its CRDs;
e2e/deploy/catalogrbac checks this list.
*/}}
{{- define "ops-server.catalogClusterRules" -}}
{{- if .Values.bootstrap.enabled }}
# deploy/charts/vm-operator: its CRDs (crds/, created on install and
# replaced on upgrade: HelmRelease install/upgrade crds CreateReplace;
# Helm never deletes a chart's CRDs, so no delete). The operator's
# ClusterRole and binding are ops-server's own (rbac-vm-operator.yaml):
# helm-controller has no RBAC verb on cluster roles, no escalate, no bind.
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [get, list, watch, create, update, patch]
{{- end }}
{{- end }}

{{- /*
The Helm repository the components of ObservabilityStacks install from:
bootstrap.repository, or the charts ops-apiserver serves on localhost to its
source-controller sidecar (the reader of every HelmRepository).
*/ -}}
{{- define "ops-server.bootstrapRepository" -}}
{{- default (printf "http://127.0.0.1:%d" (int .Values.apiserver.localRepositoryPort)) .Values.bootstrap.repository }}
{{- end }}

{{/*
The affinity of a Deployment's Pods: values.affinity when set, else
anti-affinity between the component's Pods on values.antiAffinityTopologyKey,
preferred or required as values.podAntiAffinity says (none: no affinity).
Called with (dict "root" . "component" "server" "values" .Values.server).
*/}}
{{- define "ops-server.affinity" -}}
{{- $v := .values -}}
{{- if $v.affinity }}
affinity:
  {{- toYaml $v.affinity | nindent 2 }}
{{- else if eq $v.podAntiAffinity "required" }}
affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: {{ $v.antiAffinityTopologyKey }}
        labelSelector:
          matchLabels:
            {{- include "ops-server.selectorLabels" (dict "root" .root "component" .component) | nindent 12 }}
{{- else if eq $v.podAntiAffinity "preferred" }}
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: {{ $v.antiAffinityTopologyKey }}
          labelSelector:
            matchLabels:
              {{- include "ops-server.selectorLabels" (dict "root" .root "component" .component) | nindent 14 }}
{{- end }}
{{- end }}

{{/*
The Lease a Flux controller elects its leader with, as Flux names it
(main.go: "<controller>-leader-election", and with --watch-label-selector
fluxcd/pkg/runtime/leaderelection.GenerateID appends "-" and the first 8
hex digits of the selector's SHA-256). Called with
(dict "root" . "controller" "source-controller").
*/}}
{{- define "ops-server.fluxLeaseName" -}}
{{- $id := printf "%s-leader-election" .controller -}}
{{- with .root.Values.flux.shard -}}
{{- $id = printf "%s-%s" $id (printf "sharding.fluxcd.io/key=%s" . | sha256sum | trunc 8) -}}
{{- end -}}
{{- $id -}}
{{- end }}
