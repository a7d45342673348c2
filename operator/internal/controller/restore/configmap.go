package restore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
)

// HoldInitContainer is the init container the vmcluster chart gives every
// vmstorage Pod (deploy/charts/vmcluster): it mounts the VMCluster's hold
// ConfigMap (HoldConfigMapName, optional) and waits while that ConfigMap
// has a key named after its own Pod, so vmstorage does not start.
const HoldInitContainer = "ops-hold"

// HoldConfigMapName is the hold ConfigMap of a VMCluster.
func HoldConfigMapName(vmcluster string) string { return opsv1.VMStorageHoldConfigMapName(vmcluster) }

// ConfigMapStopper is the Stopper of a real cluster. A pod is held by a
// key in its VMCluster's hold ConfigMap: key = the pod's name, value =
// "<owner> <uid>", the restore holding it and the UID of the pod that was
// running when the hold was written. Holding a pod that already runs
// vmstorage deletes it, once: only the pod of the recorded UID is deleted
// (with a UID precondition), and its successor — created by the
// StatefulSet after the key existed — sits in HoldInitContainer until the
// key is removed. A pod is stopped when HoldInitContainer runs.
//
// Why a ConfigMap key per pod and not a list: adding and removing one
// replica's hold is a merge patch of one key, with no read-modify-write
// race between replicas restored at once. Why a deletion and not a
// container kill: Kubernetes has no API to stop one container; the
// StatefulSet re-creates the pod from an unchanged template, so neither
// the StatefulSet controller nor the VictoriaMetrics operator (which
// rolls pods only when their revision differs from the StatefulSet's)
// does anything but wait for it to become Ready.
type ConfigMapStopper struct {
	Client client.Client
	// Reader reads pods and ConfigMaps fresh (the manager's API reader).
	Reader client.Reader
}

var _ Stopper = ConfigMapStopper{}

// holdConfigMap is the ConfigMap the pod's HoldInitContainer reads, "" when
// the pod has no such init container mounting a ConfigMap.
func holdConfigMap(pod *corev1.Pod) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name != HoldInitContainer {
			continue
		}
		for _, m := range c.VolumeMounts {
			for _, v := range pod.Spec.Volumes {
				if v.Name == m.Name && v.ConfigMap != nil {
					return v.ConfigMap.Name
				}
			}
		}
	}
	return ""
}

// Problem: the pod must have HoldInitContainer reading a ConfigMap.
func (s ConfigMapStopper) Problem(pod *corev1.Pod) string {
	if holdConfigMap(pod) == "" {
		return fmt.Sprintf("it has no init container %s mounting a hold ConfigMap; the vmcluster was installed by a chart without it (upgrade it with the vmcluster chart of this release, or restore by hand, docs/backups.md)", HoldInitContainer)
	}
	return ""
}

// holdValue is a key's value: "<owner> <uid>".
func holdValue(owner string, uid types.UID) string { return owner + " " + string(uid) }

func parseHold(v string) (owner string, uid types.UID) {
	o, u, _ := strings.Cut(v, " ")
	return o, types.UID(u)
}

func (s ConfigMapStopper) read(ctx context.Context, pod *corev1.Pod) (*corev1.ConfigMap, string, error) {
	name := holdConfigMap(pod)
	if name == "" {
		return nil, "", fmt.Errorf("pod %s/%s: %s", pod.Namespace, pod.Name, s.Problem(pod))
	}
	cm := &corev1.ConfigMap{}
	if err := s.Reader.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, name, nil
		}
		return nil, name, fmt.Errorf("getting ConfigMap %s/%s: %w", pod.Namespace, name, err)
	}
	return cm, name, nil
}

// Hold writes the pod's key unless it exists, deletes the pod of the
// recorded UID, and reports stopped once a pod of another UID waits in
// HoldInitContainer.
func (s ConfigMapStopper) Hold(ctx context.Context, pod *corev1.Pod, owner string) (bool, error) {
	cm, name, err := s.read(ctx, pod)
	if err != nil {
		return false, err
	}
	value, held := "", false
	if cm != nil {
		value, held = cm.Data[pod.Name]
	}
	if o, _ := parseHold(value); !held || o != owner {
		// The pod observed now is the one to restart. A pod re-created
		// between that observation and the write could have read the
		// ConfigMap before it: the pod is read again after the write,
		// and recorded again until the write is newer than the pod.
		uid, create := pod.UID, cm == nil
		for range 5 {
			if err := s.setKey(ctx, pod.Namespace, name, create, pod.Name, holdValue(owner, uid)); err != nil {
				return false, err
			}
			create = false
			now := &corev1.Pod{}
			if err := s.Reader.Get(ctx, client.ObjectKeyFromObject(pod), now); err != nil {
				if apierrors.IsNotFound(err) {
					return false, nil
				}
				return false, fmt.Errorf("getting pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			if now.UID == uid {
				break
			}
			uid = now.UID
		}
		return false, nil
	}
	_, uid := parseHold(value)
	if uid == "" {
		// Pre-held (opsv1.SeedHoldValue): stopped while it waits in the
		// hold; a pod whose vmstorage already ran is recorded, to be
		// deleted (once, by UID) on the next pass.
		if holdRunning(pod) {
			return true, nil
		}
		if holdFinished(pod) {
			return false, s.setKey(ctx, pod.Namespace, name, false, pod.Name, holdValue(owner, pod.UID))
		}
		return false, nil
	}
	if pod.UID == uid {
		// The pod that ran before the hold: delete it, this UID only
		// (a successor is never deleted; a pod already gone is fine).
		err := s.Client.Delete(ctx, pod, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("deleting pod %s/%s to hold it: %w", pod.Namespace, pod.Name, err)
		}
		return false, nil
	}
	return holdRunning(pod), nil
}

// holdRunning: the pod's HoldInitContainer runs (it waits for the key).
func holdRunning(pod *corev1.Pod) bool {
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name == HoldInitContainer {
			return cs.State.Running != nil
		}
	}
	return false
}

// holdFinished: the pod's HoldInitContainer terminated (vmstorage may run).
func holdFinished(pod *corev1.Pod) bool {
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name == HoldInitContainer {
			return cs.State.Terminated != nil
		}
	}
	return false
}

// setKey sets (value != "") or removes (value == "") one key with a merge
// patch, creating the ConfigMap when create is set and it is missing.
func (s ConfigMapStopper) setKey(ctx context.Context, ns, name string, create bool, key, value string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{"app.kubernetes.io/managed-by": skeleton.FieldOwner}}}
	if create && value != "" {
		cm.Data = map[string]string{key: value}
		err := s.Client.Create(ctx, cm, client.FieldOwner(skeleton.FieldOwner))
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", ns, name, err)
		}
	}
	var v any
	if value != "" {
		v = value
	}
	raw, err := json.Marshal(map[string]any{"data": map[string]any{key: v}})
	if err != nil {
		return err
	}
	if err := s.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(skeleton.FieldOwner)); err != nil {
		if apierrors.IsNotFound(err) && value == "" {
			return nil
		}
		return fmt.Errorf("setting %s in ConfigMap %s/%s: %w", key, ns, name, err)
	}
	return nil
}

// HeldBy is the owner in the pod's key.
func (s ConfigMapStopper) HeldBy(ctx context.Context, pod *corev1.Pod) (string, error) {
	cm, _, err := s.read(ctx, pod)
	if err != nil || cm == nil {
		return "", err
	}
	owner, _ := parseHold(cm.Data[pod.Name])
	return owner, nil
}

// Release removes the pod's key; HoldInitContainer exits once the kubelet
// updated the mounted ConfigMap (its sync period, about a minute at most).
func (s ConfigMapStopper) Release(ctx context.Context, pod *corev1.Pod) error {
	cm, name, err := s.read(ctx, pod)
	if err != nil || cm == nil {
		return err
	}
	if _, ok := cm.Data[pod.Name]; !ok {
		return nil
	}
	return s.setKey(ctx, pod.Namespace, name, false, pod.Name, "")
}

// Running: HoldInitContainer finished and the pod is Ready.
func (s ConfigMapStopper) Running(pod *corev1.Pod) bool {
	done := false
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name == HoldInitContainer {
			done = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		}
	}
	return done && podReady(pod)
}

// ReleaseHint: remove the pod's key from the ConfigMap.
func (s ConfigMapStopper) ReleaseHint(pod *corev1.Pod) string {
	return fmt.Sprintf("remove the key %s from ConfigMap %s/%s", pod.Name, pod.Namespace, holdConfigMap(pod))
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
