// Package kstatustest computes an object's kstatus
// (sigs.k8s.io/cli-utils/pkg/kstatus/status), the status that kubectl
// wait, Flux's health checks and Argo CD-style tools derive from the
// Ready/Reconciling/Stalled conditions and observedGeneration. Tests only:
// it keeps cli-utils out of the binaries.
package kstatustest

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Compute returns the kstatus of obj, a typed object of kind gvk (typed
// clients leave apiVersion and kind empty; the API server serves them).
func Compute(obj runtime.Object, gvk schema.GroupVersionKind) (status.Status, string, error) {
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return "", "", err
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: m})
	if err != nil {
		return "", "", err
	}
	return res.Status, res.Message, nil
}
