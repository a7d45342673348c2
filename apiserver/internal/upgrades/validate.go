package upgrades

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/jsonbody"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// The rules below are the CRD's (operator/api/v1alpha1), checked here
// first so a caller gets one field violation per bad field; the API
// server's own validation runs on create and dry-run as well.
var (
	dnsLabel      = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	versionRE     = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?(-[a-z0-9]+([.-][a-z0-9]+)*)?$`)
	addonVersion  = regexp.MustCompile(`^v?[0-9]+(\.[0-9]+)*([-+][0-9A-Za-z]+([.-][0-9A-Za-z]+)*)?$`)
	ackVersion    = regexp.MustCompile(opsv1.ACKTargetVersionPattern)
	providers     = []string{"eks", "gke", "aks", "ack", "mock"}
	strategies    = []string{"blue-green", "in-place"}
	resolveValues = []string{"NONE", "OVERWRITE", "PRESERVE"}
	approvalGates = []string{string(opsv1.GateBeforeNodeGroups), string(opsv1.GateBeforeEachNodeGroup), string(opsv1.GateBeforeDrain)}
)

const (
	maxItems           = 32
	maxLabel           = 63
	maxVersion         = 64
	maxAddonVersion    = 128
	maxHelmValuesBytes = 64 << 10
)

// Decode parses and validates an upgrade request. Every problem is a field
// violation; unknown fields and wrong JSON types are rejected.
func Decode(body []byte) (*Request, *apierror.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, apierror.InvalidArgument("the request body is empty", apierror.Violation("body", "a JSON object is required"))
	}
	var req Request
	if err := jsonbody.Decode(body, &req); err != nil {
		return nil, err
	}
	if v := Validate(&req); len(v) > 0 {
		return nil, apierror.InvalidArgument(fmt.Sprintf("the upgrade request has %d invalid field(s)", len(v)), v...)
	}
	return &req, nil
}

// Validate returns one violation per bad field.
func Validate(r *Request) []apierror.FieldViolation {
	var v []apierror.FieldViolation
	add := func(field, format string, args ...any) { v = append(v, apierror.Violation(field, format, args...)) }
	name := func(field, value string, max int, required bool) {
		switch {
		case value == "" && required:
			add(field, "is required")
		case value == "":
		case len(value) > max:
			add(field, "must be at most %d characters", max)
		case !dnsLabel.MatchString(value):
			add(field, "must consist of lowercase letters, digits and '-', and start and end with a letter or digit")
		}
	}
	provider := opsv1.CloudProvider(r.CloudProvider)
	// cloudName checks a cluster or node-group name against the cloud's
	// naming rules (opsv1.ClusterNameRule, NodeGroupNameRule), the same
	// patterns the CRD's CEL rules hold.
	cloudName := func(field, value string, rule func(opsv1.CloudProvider) (opsv1.NameRule, bool), required bool) {
		nr, _ := rule(provider)
		switch {
		case value == "" && required:
			add(field, "is required")
		case value == "":
		default:
			if msg := nr.Check(value); msg != "" {
				add(field, "%s", msg)
			}
		}
	}
	cloudName("k8sClusterName", r.K8sClusterName, opsv1.ClusterNameRule, true)
	name("region", r.Region, maxLabel, true)
	if r.CloudProvider == "" {
		add("cloudProvider", "is required (one of %s)", strings.Join(providers, ", "))
	} else if !oneOf(r.CloudProvider, providers) {
		add("cloudProvider", "must be one of %s", strings.Join(providers, ", "))
	}
	switch {
	case r.TargetVersion == "":
		add("targetVersion", "is required, e.g. 1.30")
	case len(r.TargetVersion) > maxVersion || !versionRE.MatchString(r.TargetVersion):
		add("targetVersion", "must be a Kubernetes version such as 1.30, 1.30.1 or 1.31.1-aliyun.1")
	case r.CloudProvider == "ack" && !ackVersion.MatchString(r.TargetVersion):
		// ACK upgrades only to its full versions: a shorter one is
		// resolved against the versions ACK offers the cluster at request
		// time (resolveTarget), a foreign suffix never matches.
		add("targetVersion", "%s, not %q", opsv1.ACKTargetVersionRule, r.TargetVersion)
	}
	if r.Schedule != "" {
		if _, err := time.Parse(time.RFC3339, r.Schedule); err != nil {
			add("schedule", "must be an RFC 3339 timestamp such as 2026-05-06T12:00:00Z")
		}
	}

	if r.MaintenanceWindow != nil {
		// The CRD's rules and the time zone it cannot check, in the words
		// the operator's preflight uses (opsv1.MaintenanceWindow.Validate).
		for _, x := range r.MaintenanceWindow.Validate() {
			add("maintenanceWindow."+x.Field, "%s", x.Message)
		}
	}
	seenGate := map[string]bool{}
	for i, a := range r.Approvals {
		f := fmt.Sprintf("approvals[%d]", i)
		switch {
		case !oneOf(a, approvalGates):
			add(f, "must be one of %s", strings.Join(approvalGates, ", "))
		case seenGate[a]:
			add(f, "duplicate approval gate %q", a)
		}
		seenGate[a] = true
	}

	if len(r.ClusterAddons) > 0 && r.CloudProvider != "" && !opsv1.CloudProvider(r.CloudProvider).SupportsClusterAddons() {
		add("clusterAddons", "cluster addons are not supported by cloud provider %s (only eks, ack and mock)", r.CloudProvider)
	}
	if len(r.ClusterAddons) > maxItems {
		add("clusterAddons", "must have at most %d items", maxItems)
	}
	seenAddon := map[string]bool{}
	for i, a := range r.ClusterAddons {
		f := fmt.Sprintf("clusterAddons[%d]", i)
		name(f+".name", a.Name, maxLabel, true)
		if a.Name != "" && seenAddon[a.Name] {
			add(f+".name", "duplicate addon %q", a.Name)
		}
		seenAddon[a.Name] = true
		switch {
		case a.Version == "":
			add(f+".version", "is required")
		case len(a.Version) > maxAddonVersion || !addonVersion.MatchString(a.Version):
			add(f+".version", "must be a version such as v1.18.5-eksbuild.1")
		}
		if a.ResolveConflicts != "" {
			if !oneOf(a.ResolveConflicts, resolveValues) {
				add(f+".resolveConflicts", "must be one of %s", strings.Join(resolveValues, ", "))
			} else if p := opsv1.CloudProvider(r.CloudProvider); p.SupportsClusterAddons() && !p.SupportsAddonResolveConflicts() {
				add(f+".resolveConflicts", "%s", opsv1.ResolveConflictsOnACK)
			}
		}
	}

	if len(r.NodeGroupUpgrades) > maxItems {
		add("nodeGroupUpgrades", "must have at most %d items", maxItems)
	}
	groups := map[string]bool{}
	for _, n := range r.NodeGroupUpgrades {
		groups[n.NodeGroupName] = true
	}
	seenGroup, seenNew := map[string]bool{}, map[string]bool{}
	for i, n := range r.NodeGroupUpgrades {
		f := fmt.Sprintf("nodeGroupUpgrades[%d]", i)
		cloudName(f+".nodeGroupName", n.NodeGroupName, opsv1.NodeGroupNameRule, true)
		if n.NodeGroupName != "" && seenGroup[n.NodeGroupName] {
			add(f+".nodeGroupName", "duplicate node group %q", n.NodeGroupName)
		}
		seenGroup[n.NodeGroupName] = true
		blueGreen := n.Strategy == "blue-green"
		if n.Strategy == "" {
			add(f+".strategy", "is required (blue-green or in-place)")
		} else if !oneOf(n.Strategy, strategies) {
			add(f+".strategy", "must be blue-green or in-place")
		}
		switch {
		case blueGreen && n.NewNodeGroupName == "":
			add(f+".newNodeGroupName", "is required for strategy blue-green")
		case !blueGreen && n.NewNodeGroupName != "" && n.Strategy != "":
			add(f+".newNodeGroupName", "is only valid with strategy blue-green")
		case n.NewNodeGroupName != "":
			cloudName(f+".newNodeGroupName", n.NewNodeGroupName, opsv1.NodeGroupNameRule, false)
			switch {
			case n.NewNodeGroupName == n.NodeGroupName:
				add(f+".newNodeGroupName", "must differ from nodeGroupName")
			case groups[n.NewNodeGroupName]:
				add(f+".newNodeGroupName", "must not be the nodeGroupName of another entry")
			case seenNew[n.NewNodeGroupName]:
				add(f+".newNodeGroupName", "duplicate new node group %q", n.NewNodeGroupName)
			}
			seenNew[n.NewNodeGroupName] = true
		}
		hasValues := len(n.VMClusterHelmValues) > 0 && string(bytes.TrimSpace(n.VMClusterHelmValues)) != "null"
		if n.RequiresVMStorageRollout && !blueGreen && n.Strategy != "" {
			add(f+".requiresVMStorageRollout", "true is only valid with strategy blue-green")
		}
		if hasValues {
			var obj map[string]any
			switch {
			case len(n.VMClusterHelmValues) > maxHelmValuesBytes:
				add(f+".vmClusterHelmValues", "must be at most %d bytes", maxHelmValuesBytes)
			case json.Unmarshal(n.VMClusterHelmValues, &obj) != nil || obj == nil:
				add(f+".vmClusterHelmValues", "must be a JSON object (a partial VMCluster spec); use {} for no change")
			case !n.RequiresVMStorageRollout:
				add(f+".vmClusterHelmValues", "requires requiresVMStorageRollout: true")
			default:
				helmValuesViolations(f+".vmClusterHelmValues", n.VMClusterHelmValues, add)
			}
		} else if n.RequiresVMStorageRollout {
			add(f+".vmClusterHelmValues", "is required when requiresVMStorageRollout is true (use {} for no VMCluster change)")
		}
		switch {
		case n.VMCluster != "" && !n.RequiresVMStorageRollout:
			add(f+".vmCluster", "is only valid with requiresVMStorageRollout: true")
		case len(n.VMCluster) > 253:
			add(f+".vmCluster", "must be at most 253 characters (a vmcluster id or name)")
		}
		if g := n.BackupBeforeRollout; g != nil {
			// The CRD's rules (NodeGroupUpgrade, BackupDestination); the
			// fs:// roots and the Secret are the ClusterBackup's preflight
			// (a backup that fails them fails the gate, and the upgrade,
			// before anything moved).
			bf := f + ".backupBeforeRollout"
			switch {
			case !n.RequiresVMStorageRollout:
				add(bf, "requires requiresVMStorageRollout: true")
			case g.Destination.URL == "":
				add(bf+".destination.url", "is required")
			default:
				if msg := opsv1.BackupDestinationProblem(g.Destination.URL); msg != "" {
					add(bf+".destination.url", "%s", msg)
				} else if opsv1.IsFSBackupDestination(g.Destination.URL) && g.Destination.CredentialsSecretRef != nil {
					add(bf+".destination.credentialsSecretRef", "is not used with an fs:// url")
				}
			}
		}
		for field, value := range map[string]string{".vmstorageSTSName": n.VMStorageSTSName, ".vmstorageSTSNamespace": n.VMStorageSTSNamespace} {
			if value == "" {
				continue
			}
			if !n.RequiresVMStorageRollout {
				add(f+field, "is only valid with requiresVMStorageRollout: true")
				continue
			}
			name(f+field, value, maxLabel, false)
		}
	}
	sortViolations(v)
	return v
}

// helmValuesViolations checks vmClusterHelmValues against its allowlist
// (opsv1.ValidateVMClusterHelmValuesJSON, the same check the operator makes
// before it starts): one violation per disallowed key, named by its path,
// e.g. nodeGroupUpgrades[0].vmClusterHelmValues.vmstorage.serviceAccountName.
func helmValuesViolations(field string, raw json.RawMessage, add func(field, format string, args ...any)) {
	for _, p := range opsv1.ValidateVMClusterHelmValuesJSON(raw) {
		f := field
		if p.Path != "" {
			f += "." + p.Path
		}
		add(f, "%s", p.Message)
	}
}

func sortViolations(v []apierror.FieldViolation) {
	// Stable order for the two map iterations above: by field then text.
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && (v[j].Field < v[j-1].Field || v[j].Field == v[j-1].Field && v[j].Description < v[j-1].Description); j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

func oneOf(s string, list []string) bool {
	for _, x := range list {
		if s == x {
			return true
		}
	}
	return false
}
