package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// PreflightResult is the outcome of one preflight check.
// +kubebuilder:validation:Enum=pass;warn;fail
type PreflightResult string

const (
	// PreflightPass: nothing in the way.
	PreflightPass PreflightResult = "pass"
	// PreflightWarn: not known to block the upgrade, but worth a look
	// (or not checkable on this provider).
	PreflightWarn PreflightResult = "warn"
	// PreflightFail: the upgrade would fail or stall; the operator does not
	// start it.
	PreflightFail PreflightResult = "fail"
)

// Names of the preflight checks (PreflightCheck.name).
const (
	PreflightCheckCluster            = "Cluster"
	PreflightCheckVersionSkew        = "VersionSkew"
	PreflightCheckNodeGroups         = "NodeGroups"
	PreflightCheckAddons             = "Addons"
	PreflightCheckAddonCompatibility = "AddonCompatibility"
	PreflightCheckDisruptionBudgets  = "PodDisruptionBudgets"
	PreflightCheckRemovedAPIs        = "RemovedAPIs"
	PreflightCheckCapacity           = "BlueGreenCapacity"
)

// PreflightReport is what the preflight found: the same checks
// POST /ops/api/v1/upgradeOperations/preflight answers with, run by
// ops-operator before the first step (package operator/pkg/preflight).
type PreflightReport struct {
	// Result is the worst result of the checks.
	// +optional
	Result PreflightResult `json:"result,omitempty"`

	// Time is when the checks ran.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`

	// TargetVersion is the version the checks were made against.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TargetVersion string `json:"targetVersion,omitempty"`

	// Checks are the checks, in a fixed order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Checks []PreflightCheck `json:"checks,omitempty"`
}

// PreflightCheck is one check of a preflight.
type PreflightCheck struct {
	// Name names the check (VersionSkew, NodeGroups, Addons,
	// AddonCompatibility, PodDisruptionBudgets, RemovedAPIs,
	// BlueGreenCapacity).
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`

	// Result is pass, warn or fail.
	Result PreflightResult `json:"result"`

	// Evidence is what the check saw, naming the objects (node groups,
	// addons, PodDisruptionBudgets and Pods, Helm releases).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	Evidence []string `json:"evidence,omitempty"`

	// Hint says how to fix a warn or fail.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Hint string `json:"hint,omitempty"`
}
