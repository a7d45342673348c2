package v1alpha1

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A vmcluster created from a backup (restore_from on POST /vmclusters, or
// the same objects committed by a GitOps user, docs/backups.md) starts with
// every vmstorage Pod held by the vmcluster chart's ops-hold init
// container: its hold ConfigMap (VMStorageHoldConfigMapName) exists before
// the HelmRelease, with one key per replica (VMStoragePodName) whose value
// names the seeding ClusterRestore and no Pod UID (SeedHoldValue, "pre-held,
// no pod yet"). The restore reconciler's ConfigMapStopper treats such a Pod
// waiting in ops-hold as stopped without deleting it, restores its volume,
// and removes the key: vmstorage starts only on restored data.

// VMStorageHoldConfigMapName is the hold ConfigMap of a VMCluster, the one
// the vmcluster chart's ops-hold init container mounts.
func VMStorageHoldConfigMapName(vmcluster string) string { return vmcluster + "-vmstorage-hold" }

// VMStoragePodName is the name vm-operator gives vmstorage replica i of a
// VMCluster (its StatefulSet is vmstorage-<vmcluster>).
func VMStoragePodName(vmcluster string, i int) string {
	return fmt.Sprintf("vmstorage-%s-%d", vmcluster, i)
}

// SeedHoldValue is the value of a pre-held replica's key: "<owner> " with
// an empty Pod UID, owner being "<namespace>/<ClusterRestore name>".
func SeedHoldValue(owner string) string { return owner + " " }

// IsSeedHold reports whether a hold key's value is a pre-held one of owner.
func IsSeedHold(value, owner string) bool {
	o, uid, _ := strings.Cut(value, " ")
	return o == owner && uid == ""
}

// SeedHoldConfigMap is the hold ConfigMap a vmcluster created from a
// backup starts with: replicas keys pre-held for the ClusterRestore
// restoreNamespace/SeedRestoreName(vmcluster). Both the REST path and the
// GitOps example in docs/backups.md are this object.
func SeedHoldConfigMap(namespace, vmcluster, restoreNamespace string, replicas int) *corev1.ConfigMap {
	owner := restoreNamespace + "/" + SeedRestoreName(vmcluster)
	data := make(map[string]string, replicas)
	for i := range replicas {
		data[VMStoragePodName(vmcluster, i)] = SeedHoldValue(owner)
	}
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: VMStorageHoldConfigMapName(vmcluster),
			Labels: map[string]string{"app.kubernetes.io/managed-by": "ops-server"}},
		Data: data,
	}
}
