{{- /*
The objects are named after the release; the ClusterRole and
ClusterRoleBinding are cluster-scoped, so their names carry the release
namespace too.
*/ -}}
{{- define "vm-operator.labels" -}}
app.kubernetes.io/name: vm-operator
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{- end -}}
{{- define "vm-operator.selector" -}}
app.kubernetes.io/name: vm-operator
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end -}}
{{- define "vm-operator.clusterName" -}}
{{- printf "%s-%s" .Release.Namespace .Release.Name -}}
{{- end -}}
