package restore

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
)

// HoldAnnotation on a vmstorage Pod asks for its vmstorage to be stopped
// and kept stopped; its value names the ClusterRestore holding it
// ("<namespace>/<name>"). ops-operator sets it before a replica is
// restored and removes it once vmrestore succeeded. A replica whose
// restore failed keeps it: its data is incomplete (docs/backups.md).
const HoldAnnotation = opsv1.VMStorageHoldAnnotation

// LocalStoppedAnnotation is set to "true" by the local stack's backer (the
// stand-in for the kubelet, e2e/stack/backer.go) once the vmstorage
// process of a held Pod has exited, and removed when it runs again.
const LocalStoppedAnnotation = "local.ops.observability.tidbcloud.com/stopped"

// Stopper stops and starts the vmstorage of one replica.
type Stopper interface {
	// Problem says why the pod cannot be held ("" when it can); a
	// restore checks every replica before it touches any.
	Problem(pod *corev1.Pod) string
	// Hold asks for the pod's vmstorage to stop and stay stopped
	// (idempotent) and reports whether it is held and has stopped: its
	// volume may be written.
	Hold(ctx context.Context, pod *corev1.Pod, owner string) (stopped bool, err error)
	// HeldBy returns the owner holding the pod, "" when none.
	HeldBy(ctx context.Context, pod *corev1.Pod) (string, error)
	// Release lets the pod's vmstorage start again (idempotent).
	Release(ctx context.Context, pod *corev1.Pod) error
	// Running reports whether the pod's vmstorage runs again and is
	// Ready.
	Running(pod *corev1.Pod) bool
	// ReleaseHint says how a person starts a held pod's vmstorage by
	// hand (for the message of a failed restore).
	ReleaseHint(pod *corev1.Pod) string
}

// AnnotationStopper is the Stopper of local mode: the hold is
// HoldAnnotation on the Pod, honoured by the local stack's backer, which
// confirms a stopped process with LocalStoppedAnnotation.
type AnnotationStopper struct {
	Client client.Client
}

var _ Stopper = AnnotationStopper{}

// Problem: none, every pod of the local stack can be held.
func (s AnnotationStopper) Problem(*corev1.Pod) string { return "" }

// Hold sets HoldAnnotation on the pod (its UID in the patch, so it never
// lands on a pod re-created under the same name); stopped once the
// backer says the process is gone.
func (s AnnotationStopper) Hold(ctx context.Context, pod *corev1.Pod, owner string) (bool, error) {
	if pod.Annotations[HoldAnnotation] != owner {
		return false, s.patch(ctx, pod, owner)
	}
	return pod.Annotations[LocalStoppedAnnotation] == "true", nil
}

// HeldBy is the annotation's value.
func (s AnnotationStopper) HeldBy(_ context.Context, pod *corev1.Pod) (string, error) {
	return pod.Annotations[HoldAnnotation], nil
}

// ReleaseHint: remove the annotation.
func (s AnnotationStopper) ReleaseHint(*corev1.Pod) string {
	return "remove the annotation " + HoldAnnotation + " from the pod"
}

// Release removes HoldAnnotation.
func (s AnnotationStopper) Release(ctx context.Context, pod *corev1.Pod) error {
	if _, ok := pod.Annotations[HoldAnnotation]; !ok {
		return nil
	}
	return s.patch(ctx, pod, nil)
}

// Running: not held, the backer no longer reports it stopped, and the Pod
// is Ready (its readiness follows the process's /health).
func (s AnnotationStopper) Running(pod *corev1.Pod) bool {
	if _, held := pod.Annotations[HoldAnnotation]; held || pod.Annotations[LocalStoppedAnnotation] != "" {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (s AnnotationStopper) patch(ctx context.Context, pod *corev1.Pod, value any) error {
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": pod.UID, "annotations": map[string]any{HoldAnnotation: value},
	}})
	if err != nil {
		return err
	}
	if err := s.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(skeleton.FieldOwner)); err != nil {
		return fmt.Errorf("annotating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
