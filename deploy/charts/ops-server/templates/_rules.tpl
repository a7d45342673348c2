{{/*
The alert rules, one source rendered into both the PrometheusRule
(prometheusrule.yaml) and the VMRule (vmrule.yaml): the groups of their
spec.groups. docs/metrics.md lists them; e2e/deploy/rules evaluates every
expression with the real VictoriaMetrics binaries.
*/}}
{{- define "ops-server.ruleGroups" -}}
{{- $r := .Values.monitoring.rules -}}
- name: ops-server
  rules:
    - alert: OpsServerUpgradeFailed
      expr: max by (namespace, name, provider) (ops_clusterupgradeoperation_status_phase{phase="Failed"}) == 1
      labels:
        severity: critical
        {{- with $r.labels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        summary: ClusterUpgradeOperation {{ "{{" }} $labels.namespace {{ "}}" }}/{{ "{{" }} $labels.name {{ "}}" }} failed.
        description: The upgrade ({{ "{{" }} $labels.provider {{ "}}" }}) failed; its status.steps, status.leftBehind and Events say what it changed. The alert fires until the operation is deleted.
    - alert: OpsServerUpgradeBlocked
      expr: time() - max by (namespace, name, provider, step, reason) (ops_clusterupgradeoperation_blocked_since_timestamp_seconds) > {{ $r.upgradeBlockedSeconds }}
      labels:
        severity: warning
        {{- with $r.labels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        summary: ClusterUpgradeOperation {{ "{{" }} $labels.namespace {{ "}}" }}/{{ "{{" }} $labels.name {{ "}}" }} is blocked ({{ "{{" }} $labels.reason {{ "}}" }}).
        description: Step {{ "{{" }} $labels.step {{ "}}" }} has been blocked by {{ "{{" }} $labels.reason {{ "}}" }} (for example a PodDisruptionBudget refusing an eviction during a drain) for more than {{ $r.upgradeBlockedSeconds }} s; status.blockedBy names the Pod or node.
    - alert: OpsServerBackupMissing
      expr: time() - max by (namespace, vmcluster) (ops_backup_last_success_timestamp_seconds) > {{ $r.backupMaxAgeHours }} * 3600
      labels:
        severity: warning
        {{- with $r.labels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        summary: No successful backup of VMCluster {{ "{{" }} $labels.namespace {{ "}}" }}/{{ "{{" }} $labels.vmcluster {{ "}}" }} for {{ $r.backupMaxAgeHours }} hours.
        description: The last Succeeded ClusterBackup of the VMCluster completed more than {{ $r.backupMaxAgeHours }} hours ago, or none ever succeeded.
    - alert: OpsServerAPIErrors
      expr: sum(rate(ops_apiserver_http_requests_total{code=~"5.."}[5m])) / sum(rate(ops_apiserver_http_requests_total[5m])) > {{ $r.apiErrorRatio }}
      for: 5m
      labels:
        severity: warning
        {{- with $r.labels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        summary: More than {{ $r.apiErrorRatio }} of ops-apiserver's requests fail with a 5xx.
        description: ops_apiserver_http_requests_total by route says which; ops-apiserver's log has the errors.
    - alert: OpsServerOperatorNotLeading
      expr: max(ops_operator_leader) < 1 or absent(ops_operator_leader)
      for: 5m
      labels:
        severity: critical
        {{- with $r.labels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        summary: No ops-operator replica leads.
        description: No ClusterUpgradeOperation, ClusterBackup or other operation makes progress; check the ops-operator Pods and their leader election Lease.
{{- end }}
