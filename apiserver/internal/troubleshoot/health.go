package troubleshoot

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// releaseHealth maps the vmcluster status to the HelmRelease's health.
func releaseHealth(v vmclusters.VMCluster) (Health, string) {
	reason := strings.TrimSpace(v.StatusReason + ": " + v.StatusMessage)
	reason = strings.Trim(reason, ": ")
	switch v.Status {
	case vmclusters.StatusRunning:
		return Healthy, ""
	case vmclusters.StatusFailed:
		return Degraded, reason
	default:
		return Progressing, strings.TrimSpace(string(v.Status) + " " + reason)
	}
}

// vmclusterHealth reads the VM operator's status of a VMCluster
// (status.updateStatus, or status.clusterStatus in older operators).
func vmclusterHealth(u *unstructured.Unstructured) (Health, string) {
	st, _, _ := unstructured.NestedString(u.Object, "status", "updateStatus")
	if st == "" {
		st, _, _ = unstructured.NestedString(u.Object, "status", "clusterStatus")
	}
	reason, _, _ := unstructured.NestedString(u.Object, "status", "reason")
	switch strings.ToLower(st) {
	case "operational":
		return Healthy, ""
	case "failed":
		return Degraded, "the VM operator reports failed: " + reason
	case "":
		return Progressing, "the VM operator has not reported a status yet"
	default:
		return Progressing, "the VM operator reports " + st
	}
}

// workloadHealth is the health of a StatefulSet or Deployment from its
// counts and its Pods' health: Degraded when a Pod is Degraded, else
// Progressing until every replica is updated and ready.
func workloadHealth(generation, observed int64, desired, updated, ready int32, pods []Node) (Health, string) {
	for _, p := range pods {
		if p.Health == Degraded {
			return Degraded, fmt.Sprintf("%d of %d replicas ready; Pod %s: %s", ready, desired, p.Name, p.HealthReason)
		}
	}
	switch {
	case observed < generation:
		return Progressing, "the controller has not observed the latest generation yet"
	case updated < desired:
		return Progressing, fmt.Sprintf("%d of %d replicas updated", updated, desired)
	case ready < desired:
		return Progressing, fmt.Sprintf("%d of %d replicas ready", ready, desired)
	}
	return Healthy, ""
}

func statefulSetNode(s *appsv1.StatefulSet, pods []Node) Node {
	desired := ptr.Deref(s.Spec.Replicas, 1)
	h, r := workloadHealth(s.Generation, s.Status.ObservedGeneration, desired, s.Status.UpdatedReplicas, s.Status.ReadyReplicas, pods)
	return Node{Kind: "StatefulSet", Name: s.Name, Namespace: s.Namespace, UID: string(s.UID), Health: h, HealthReason: r,
		Ready: ptr.To(s.Status.ReadyReplicas), Desired: ptr.To(desired), Children: pods}
}

func deploymentNode(d *appsv1.Deployment, children []Node) Node {
	desired := ptr.Deref(d.Spec.Replicas, 1)
	var pods []Node
	for _, rs := range children {
		pods = append(pods, rs.Children...)
	}
	h, r := workloadHealth(d.Generation, d.Status.ObservedGeneration, desired, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, pods)
	return Node{Kind: "Deployment", Name: d.Name, Namespace: d.Namespace, UID: string(d.UID), Health: h, HealthReason: r,
		Ready: ptr.To(d.Status.ReadyReplicas), Desired: ptr.To(desired), Children: children}
}

func replicaSetNode(rs *appsv1.ReplicaSet, pods []Node) Node {
	desired := ptr.Deref(rs.Spec.Replicas, 1)
	h, r := workloadHealth(rs.Generation, rs.Status.ObservedGeneration, desired, desired, rs.Status.ReadyReplicas, pods)
	return Node{Kind: "ReplicaSet", Name: rs.Name, Namespace: rs.Namespace, UID: string(rs.UID), Health: h, HealthReason: r,
		Ready: ptr.To(rs.Status.ReadyReplicas), Desired: ptr.To(desired), Children: pods}
}

func pvcNode(c *corev1.PersistentVolumeClaim) Node {
	n := Node{Kind: "PersistentVolumeClaim", Name: c.Name, Namespace: c.Namespace, UID: string(c.UID)}
	switch c.Status.Phase {
	case corev1.ClaimBound:
		n.Health = Healthy
	case corev1.ClaimLost:
		n.Health, n.HealthReason = Degraded, "the bound PersistentVolume is lost"
	default:
		n.Health, n.HealthReason = Progressing, "not bound yet"
	}
	return n
}

// failingWaitReasons are container waiting reasons that mean the
// container cannot start, not that it is about to.
var failingWaitReasons = map[string]bool{
	"CrashLoopBackOff": true, "ImagePullBackOff": true, "ErrImagePull": true, "CreateContainerConfigError": true,
	"CreateContainerError": true, "InvalidImageName": true, "RunContainerError": true,
}

// PodHealth is the health of a Pod: Healthy when running and ready;
// Degraded when it failed, a container cannot start, or a started
// container is not ready; Progressing otherwise (scheduling, pulling,
// starting).
func PodHealth(p *corev1.Pod) (Health, string) {
	if p.DeletionTimestamp != nil {
		return Progressing, "being deleted"
	}
	switch p.Status.Phase {
	case corev1.PodFailed:
		return Degraded, strings.TrimSpace("failed " + p.Status.Reason + " " + p.Status.Message)
	case corev1.PodSucceeded:
		return Degraded, "the Pod's containers exited (a VictoriaMetrics component must keep running)"
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && failingWaitReasons[w.Reason] {
			return Degraded, fmt.Sprintf("container %s: %s%s", cs.Name, w.Reason, lastExit(cs))
		}
	}
	if p.Status.Phase != corev1.PodRunning {
		return Progressing, "phase " + string(p.Status.Phase)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			continue
		}
		state := "not ready"
		switch {
		case cs.State.Waiting != nil:
			state = "waiting: " + cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			state = fmt.Sprintf("terminated: %s (exit code %d)", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		}
		return Degraded, fmt.Sprintf("container %s %s%s", cs.Name, state, lastExit(cs))
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
			return Degraded, strings.TrimSpace("not ready: " + c.Reason + " " + c.Message)
		}
	}
	return Healthy, ""
}

func lastExit(cs corev1.ContainerStatus) string {
	if t := cs.LastTerminationState.Terminated; t != nil {
		return fmt.Sprintf(" (last exit: %s, code %d)", t.Reason, t.ExitCode)
	}
	return ""
}

func readyContainers(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			n++
		}
	}
	return n
}

func podNode(p *corev1.Pod, pvcs []Node) Node {
	h, r := PodHealth(p)
	return Node{Kind: "Pod", Name: p.Name, Namespace: p.Namespace, UID: string(p.UID), Health: h, HealthReason: r,
		Ready: ptr.To(readyContainers(p)), Desired: ptr.To(int32(len(p.Spec.Containers))), Children: pvcs}
}
