package preflight

import "github.com/tidbcloud/ops-server/operator/pkg/cloud"

// RemovedAPI is an API version that Kubernetes stops serving in a minor
// release.
type RemovedAPI struct {
	// GroupVersion is the removed version (batch/v1beta1).
	GroupVersion string
	Kind         string
	// Resource is the plural resource name, for listing live objects.
	Resource string
	// RemovedIn is the minor release that no longer serves it (1.25).
	RemovedIn string
	// Replacement is the version to move to ("" when the kind is gone).
	Replacement string
}

// RemovedAPIs is the maintained deprecation table: every API version
// removed by the Kubernetes minor releases from 1.22 on. Source: the
// upstream "Deprecated API Migration Guide",
// https://kubernetes.io/docs/reference/using-api/deprecation-guide/
// ("Removed APIs by release": the v1.22, v1.25, v1.26, v1.27, v1.29 and
// v1.32 sections; the guide lists no removal in the other minors up to
// v1.32 and none after it when this table was written). When the guide
// gains a section, add it here.
var RemovedAPIs = []RemovedAPI{
	// v1.22
	{"admissionregistration.k8s.io/v1beta1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", "1.22", "admissionregistration.k8s.io/v1"},
	{"admissionregistration.k8s.io/v1beta1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", "1.22", "admissionregistration.k8s.io/v1"},
	{"apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", "customresourcedefinitions", "1.22", "apiextensions.k8s.io/v1"},
	{"apiregistration.k8s.io/v1beta1", "APIService", "apiservices", "1.22", "apiregistration.k8s.io/v1"},
	{"certificates.k8s.io/v1beta1", "CertificateSigningRequest", "certificatesigningrequests", "1.22", "certificates.k8s.io/v1"},
	{"coordination.k8s.io/v1beta1", "Lease", "leases", "1.22", "coordination.k8s.io/v1"},
	{"extensions/v1beta1", "Ingress", "ingresses", "1.22", "networking.k8s.io/v1"},
	{"networking.k8s.io/v1beta1", "Ingress", "ingresses", "1.22", "networking.k8s.io/v1"},
	{"networking.k8s.io/v1beta1", "IngressClass", "ingressclasses", "1.22", "networking.k8s.io/v1"},
	{"rbac.authorization.k8s.io/v1beta1", "ClusterRole", "clusterroles", "1.22", "rbac.authorization.k8s.io/v1"},
	{"rbac.authorization.k8s.io/v1beta1", "ClusterRoleBinding", "clusterrolebindings", "1.22", "rbac.authorization.k8s.io/v1"},
	{"rbac.authorization.k8s.io/v1beta1", "Role", "roles", "1.22", "rbac.authorization.k8s.io/v1"},
	{"rbac.authorization.k8s.io/v1beta1", "RoleBinding", "rolebindings", "1.22", "rbac.authorization.k8s.io/v1"},
	{"scheduling.k8s.io/v1beta1", "PriorityClass", "priorityclasses", "1.22", "scheduling.k8s.io/v1"},
	{"storage.k8s.io/v1beta1", "CSIDriver", "csidrivers", "1.22", "storage.k8s.io/v1"},
	{"storage.k8s.io/v1beta1", "CSINode", "csinodes", "1.22", "storage.k8s.io/v1"},
	{"storage.k8s.io/v1beta1", "StorageClass", "storageclasses", "1.22", "storage.k8s.io/v1"},
	{"storage.k8s.io/v1beta1", "VolumeAttachment", "volumeattachments", "1.22", "storage.k8s.io/v1"},
	// v1.25
	{"batch/v1beta1", "CronJob", "cronjobs", "1.25", "batch/v1"},
	{"discovery.k8s.io/v1beta1", "EndpointSlice", "endpointslices", "1.25", "discovery.k8s.io/v1"},
	{"events.k8s.io/v1beta1", "Event", "events", "1.25", "events.k8s.io/v1"},
	{"autoscaling/v2beta1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "1.25", "autoscaling/v2"},
	{"policy/v1beta1", "PodDisruptionBudget", "poddisruptionbudgets", "1.25", "policy/v1"},
	{"policy/v1beta1", "PodSecurityPolicy", "podsecuritypolicies", "1.25", ""},
	{"node.k8s.io/v1beta1", "RuntimeClass", "runtimeclasses", "1.25", "node.k8s.io/v1"},
	// v1.26
	{"flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema", "flowschemas", "1.26", "flowcontrol.apiserver.k8s.io/v1"},
	{"flowcontrol.apiserver.k8s.io/v1beta1", "PriorityLevelConfiguration", "prioritylevelconfigurations", "1.26", "flowcontrol.apiserver.k8s.io/v1"},
	{"autoscaling/v2beta2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "1.26", "autoscaling/v2"},
	// v1.27
	{"storage.k8s.io/v1beta1", "CSIStorageCapacity", "csistoragecapacities", "1.27", "storage.k8s.io/v1"},
	// v1.29
	{"flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema", "flowschemas", "1.29", "flowcontrol.apiserver.k8s.io/v1"},
	{"flowcontrol.apiserver.k8s.io/v1beta2", "PriorityLevelConfiguration", "prioritylevelconfigurations", "1.29", "flowcontrol.apiserver.k8s.io/v1"},
	// v1.32
	{"flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", "flowschemas", "1.32", "flowcontrol.apiserver.k8s.io/v1"},
	{"flowcontrol.apiserver.k8s.io/v1beta3", "PriorityLevelConfiguration", "prioritylevelconfigurations", "1.32", "flowcontrol.apiserver.k8s.io/v1"},
}

// removedBetween returns the entries removed by an upgrade from the
// current minor to the target: current < RemovedIn <= target.
func removedBetween(current, target string) []RemovedAPI {
	_, cMin, ok1 := cloud.MajorMinor(current)
	_, tMin, ok2 := cloud.MajorMinor(target)
	if !ok1 || !ok2 {
		return nil
	}
	var out []RemovedAPI
	for _, r := range RemovedAPIs {
		_, rMin, _ := cloud.MajorMinor(r.RemovedIn)
		if rMin > cMin && rMin <= tMin {
			out = append(out, r)
		}
	}
	return out
}

// removedAPI finds the entry of apiVersion/kind among entries.
func removedAPI(entries []RemovedAPI, apiVersion, kind string) (RemovedAPI, bool) {
	for _, r := range entries {
		if r.GroupVersion == apiVersion && r.Kind == kind {
			return r, true
		}
	}
	return RemovedAPI{}, false
}
