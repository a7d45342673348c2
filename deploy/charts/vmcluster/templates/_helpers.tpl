{{- /*
Every value reaches the output typed: integers through int, strings through
quote, the pass-through subtrees (resources, nodeSelector, tolerations,
affinity) through toYaml under their own key. No value can add a line, a
field or a document of its own (values.schema.json bounds them as well).
*/ -}}
{{- define "vmcluster.component" -}}
{{- $c := .component -}}
replicaCount: {{ int $c.replicaCount }}
image:
  tag: {{ .root.Values.imageTag | toString | quote }}
{{- with $c.resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
