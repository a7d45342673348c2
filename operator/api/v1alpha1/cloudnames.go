package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Cloud naming rules: k8sClusterName, nodeGroupName and newNodeGroupName
// accept what each cloud accepts, not only DNS labels. The REST API checks
// a request against these rules (one field violation per bad name) and the
// CRD holds the same patterns as CEL rules keyed on cloudProvider (the
// XValidation markers of ClusterUpgradeOperationSpec, which must be kept
// equal to the patterns below; operator/internal/apivalidation proves both
// on a real API server with the same table of names).
//
// Sources (each provider's API reference):
//   - EKS CreateCluster name: "can contain only alphanumeric characters
//     (case-sensitive), hyphens, and underscores. It must start with an
//     alphanumeric character and can't be longer than 100 characters"
//     (pattern ^[0-9A-Za-z][A-Za-z0-9\-_]*, length 1-100).
//   - EKS CreateNodegroup nodegroupName: "can't be longer than 63
//     characters. It must start with a letter or digit, but can also
//     include hyphens and underscores for the remaining characters".
//   - GKE cluster name: "must start with a lowercase letter followed by up
//     to 39 lowercase letters, numbers, or hyphens, and cannot end with a
//     hyphen" (40 at most); node pool names follow the same rule.
//   - AKS managed cluster (ARM resourceName): 1-63 characters, letters,
//     digits, '-' and '_', starting and ending with a letter or digit
//     (^[a-zA-Z0-9]$|^[a-zA-Z0-9][-_a-zA-Z0-9]{0,61}[a-zA-Z0-9]$). AKS
//     agent pool name: 1-12 lowercase letters and digits, starting with a
//     letter (Windows pools 6; not distinguished here).
//   - ACK cluster and node pool names: 1-63 characters, Chinese
//     characters, letters, digits, '-' and '_', not starting with '-' or
//     '_' (CreateCluster name, CreateClusterNodePool nodepool_info.name).
//   - mock, the simulated cloud: DNS labels (its node groups name Nodes).

// NameRule is one cloud's rule for one kind of name.
// +kubebuilder:object:generate=false
type NameRule struct {
	// Pattern is the regular expression a name matches, length included
	// (RE2: Go and CEL read it alike; lengths count characters).
	Pattern string
	// Description completes "must be …" in a refusal.
	Description string
	re          *regexp.Regexp
}

// Check returns "" for a name the rule accepts, else why not ("must be …").
func (r NameRule) Check(name string) string {
	if r.re.MatchString(name) {
		return ""
	}
	return "must be " + r.Description
}

func rule(pattern, description string) NameRule {
	return NameRule{Pattern: pattern, Description: description, re: regexp.MustCompile(pattern)}
}

var (
	eksClusterName = rule(`^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$`,
		"1 to 100 letters, digits, '-' and '_', starting with a letter or digit, for cloudProvider eks")
	eksNodeGroupName = rule(`^[0-9A-Za-z][A-Za-z0-9_-]{0,62}$`,
		"1 to 63 letters, digits, '-' and '_', starting with a letter or digit, for cloudProvider eks")
	gkeName = rule(`^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$`,
		"1 to 40 lowercase letters, digits and '-', starting with a letter and not ending with '-', for cloudProvider gke")
	aksClusterName = rule(`^[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?$`,
		"1 to 63 letters, digits, '-' and '_', starting and ending with a letter or digit, for cloudProvider aks")
	aksPoolName = rule(`^[a-z][a-z0-9]{0,11}$`,
		"1 to 12 lowercase letters and digits, starting with a letter, for cloudProvider aks")
	ackName = rule(`^[\p{Han}A-Za-z0-9][\p{Han}A-Za-z0-9_-]{0,62}$`,
		"1 to 63 Chinese characters, letters, digits, '-' and '_', not starting with '-' or '_', for cloudProvider ack")
	mockClusterName = rule(`^[a-z0-9]([-a-z0-9]{0,98}[a-z0-9])?$`,
		"1 to 100 lowercase letters, digits and '-', starting and ending with a letter or digit, for cloudProvider mock")
	mockNodeGroupName = rule(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`,
		"1 to 63 lowercase letters, digits and '-', starting and ending with a letter or digit, for cloudProvider mock")
	// What some cloud accepts: the CRD's own patterns and lengths of the
	// fields, the rule when the provider is unknown.
	anyClusterName = rule(`^[\p{Han}A-Za-z0-9][\p{Han}A-Za-z0-9_-]{0,99}$`,
		"1 to 100 Chinese characters, letters, digits, '-' and '_', not starting with '-' or '_'")
	anyNodeGroupName = rule(`^[\p{Han}A-Za-z0-9][\p{Han}A-Za-z0-9_-]{0,62}$`,
		"1 to 63 Chinese characters, letters, digits, '-' and '_', not starting with '-' or '_'")
)

// ClusterNameRule is the rule for k8sClusterName on provider p; for an
// unknown provider, ok is false and the rule is what some cloud accepts.
func ClusterNameRule(p CloudProvider) (NameRule, bool) {
	switch p {
	case CloudProviderEKS:
		return eksClusterName, true
	case CloudProviderGKE:
		return gkeName, true
	case CloudProviderAKS:
		return aksClusterName, true
	case CloudProviderACK:
		return ackName, true
	case CloudProviderMock:
		return mockClusterName, true
	}
	return anyClusterName, false
}

// NodeGroupNameRule is the rule for nodeGroupName and newNodeGroupName on
// provider p; for an unknown provider, ok is false and the rule is what
// some cloud accepts.
func NodeGroupNameRule(p CloudProvider) (NameRule, bool) {
	switch p {
	case CloudProviderEKS:
		return eksNodeGroupName, true
	case CloudProviderGKE:
		return gkeName, true
	case CloudProviderAKS:
		return aksPoolName, true
	case CloudProviderACK:
		return ackName, true
	case CloudProviderMock:
		return mockNodeGroupName, true
	}
	return anyNodeGroupName, false
}

// ResolveConflictsOnACK is why clusterAddons[].resolveConflicts is refused
// on ack, by the REST API and by the CRD alike.
const ResolveConflictsOnACK = "is an EKS setting; cloud provider ack has no such option"

// ACKTargetVersionPattern is what targetVersion must match on ack: a minor
// or patch (resolved against the versions ACK offers the cluster) or a
// full ACK version; a foreign suffix never matches.
const ACKTargetVersionPattern = `^[0-9]+\.[0-9]+(\.[0-9]+(-aliyun\.[0-9]+)?)?$`

// ACKTargetVersionRule is why another targetVersion is refused on ack, by
// the REST API and by the CRD alike.
const ACKTargetVersionRule = "cloud provider ack needs a minor such as 1.31 (resolved to the newest available patch) or a full ACK version such as 1.31.1-aliyun.1"

// ClusterNameField is the selectable field of ClusterUpgradeOperations
// (the CRD's selectableFields): a list with the field selector
// spec.k8sClusterName=<name> gets only the operations of clusters of that
// name from the API server. Readers on an informer cache or a fake
// client index spec.k8sClusterName under this name.
const ClusterNameField = "spec.k8sClusterName"

// LabelClusterName is the label of an operation naming its cluster's
// k8sClusterName, so that `kubectl get -l` finds a cluster's operations;
// its value is ClusterNameLabelValue(k8sClusterName).
const LabelClusterName = "ops.observability.tidbcloud.com/k8s-cluster-name"

// ClusterNameLabelValue is the label-safe form of a cluster name: the name
// itself when it is a valid label value (every GKE, AKS and mock name, and
// EKS names of at most 63 characters), else "h-" and the first 40 hex
// digits of its SHA-256 (a longer EKS name, an ACK name with Chinese
// characters or a trailing '_'). The raw name stays in spec.k8sClusterName.
func ClusterNameLabelValue(name string) string {
	if len(validation.IsValidLabelValue(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "h-" + hex.EncodeToString(sum[:])[:40]
}
