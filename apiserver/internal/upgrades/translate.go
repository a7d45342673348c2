package upgrades

import (
	"encoding/json"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Labels ops-apiserver sets on the operations it creates (the annotations
// are opsv1.AnnotationInitiatedBy and opsv1.AnnotationIdempotencyKey).
const (
	// LabelCluster names the operation's cluster in a label-safe form
	// (opsv1.ClusterNameLabelValue: the name, or a hash of a name that is
	// not a valid label value).
	LabelCluster = opsv1.LabelClusterName
)

// toSpec builds the CR spec from a validated request, defaults applied
// (the one Default() the operator uses too).
func toSpec(r *Request) opsv1.ClusterUpgradeOperationSpec {
	spec := opsv1.ClusterUpgradeOperationSpec{
		K8sClusterName: r.K8sClusterName,
		Region:         r.Region,
		CloudProvider:  opsv1.CloudProvider(r.CloudProvider),
		TargetVersion:  r.TargetVersion,
	}
	if r.Schedule != "" {
		if t, err := time.Parse(time.RFC3339, r.Schedule); err == nil {
			mt := metav1.NewTime(t.UTC())
			spec.Schedule = &mt
		}
	}
	for _, a := range r.ClusterAddons {
		spec.ClusterAddons = append(spec.ClusterAddons, opsv1.ClusterAddon{Name: a.Name, Version: a.Version, ResolveConflicts: opsv1.ResolveConflicts(a.ResolveConflicts)})
	}
	for _, n := range r.NodeGroupUpgrades {
		ng := opsv1.NodeGroupUpgrade{
			NodeGroupName: n.NodeGroupName, Strategy: opsv1.UpgradeStrategy(n.Strategy),
			RequiresVMStorageRollout: n.RequiresVMStorageRollout, NewNodeGroupName: n.NewNodeGroupName,
			VMStorageSTSName: n.VMStorageSTSName, VMStorageSTSNamespace: n.VMStorageSTSNamespace,
			VMCluster: n.vmClusterRef, BackupBeforeRollout: n.BackupBeforeRollout,
		}
		if len(n.VMClusterHelmValues) > 0 && string(n.VMClusterHelmValues) != "null" {
			// Validated: an object of objects.
			ng.VMClusterHelmValues, _ = opsv1.ParseVMClusterHelmValues(compactJSON(n.VMClusterHelmValues))
		}
		spec.NodeGroupUpgrades = append(spec.NodeGroupUpgrades, ng)
	}
	if r.MaintenanceWindow != nil {
		w := *r.MaintenanceWindow
		w.Days = append([]opsv1.Weekday(nil), w.Days...)
		spec.MaintenanceWindow = &w
	}
	for _, a := range r.Approvals {
		spec.Approvals = append(spec.Approvals, opsv1.ApprovalGate(a))
	}
	spec.Default()
	return spec
}

func compactJSON(raw []byte) []byte {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

// fromSpec is the request view of a spec.
func fromSpec(s *opsv1.ClusterUpgradeOperationSpec) Request {
	r := Request{K8sClusterName: s.K8sClusterName, Region: s.Region, CloudProvider: string(s.CloudProvider), TargetVersion: s.TargetVersion}
	if s.Schedule != nil {
		r.Schedule = s.Schedule.UTC().Format(time.RFC3339)
	}
	for _, a := range s.ClusterAddons {
		r.ClusterAddons = append(r.ClusterAddons, Addon{Name: a.Name, Version: a.Version, ResolveConflicts: string(a.ResolveConflicts)})
	}
	for _, n := range s.NodeGroupUpgrades {
		ng := NodeGroupUpgrade{
			NodeGroupName: n.NodeGroupName, Strategy: string(n.Strategy), RequiresVMStorageRollout: n.RequiresVMStorageRollout,
			NewNodeGroupName: n.NewNodeGroupName, VMStorageSTSName: n.VMStorageSTSName, VMStorageSTSNamespace: n.VMStorageSTSNamespace,
			BackupBeforeRollout: n.BackupBeforeRollout,
		}
		if n.VMCluster != nil {
			ng.VMCluster = n.VMCluster.Name
		}
		if n.VMClusterHelmValues != nil {
			if b, err := json.Marshal(n.VMClusterHelmValues); err == nil {
				ng.VMClusterHelmValues = json.RawMessage(b)
			}
		}
		r.NodeGroupUpgrades = append(r.NodeGroupUpgrades, ng)
	}
	if s.MaintenanceWindow != nil {
		w := *s.MaintenanceWindow.DeepCopy()
		r.MaintenanceWindow = &w
	}
	for _, a := range s.Approvals {
		r.Approvals = append(r.Approvals, string(a))
	}
	return r
}

// toOperation is the API view of an object.
func toOperation(o *opsv1.ClusterUpgradeOperation) Operation {
	op := Operation{
		ID: string(o.UID), Name: o.Name, Namespace: o.Namespace, Spec: fromSpec(&o.Spec),
		Paused: o.Spec.Paused, CancelRequest: o.Spec.Cancel,
		Phase: string(o.Status.Phase), CurrentStep: o.Status.CurrentStep,
		InitiatedBy: o.Annotations[opsv1.AnnotationInitiatedBy],
		StartTime:   timePtr(o.Status.StartTime), CompletionTime: timePtr(o.Status.CompletionTime),
		Steps: []Step{},
	}
	if op.Phase == "" {
		op.Phase = string(opsv1.UpgradePhasePending)
	}
	if !o.CreationTimestamp.IsZero() {
		t := o.CreationTimestamp.UTC()
		op.CreateTime = &t
	}
	if c := apimeta.FindStatusCondition(o.Status.Conditions, opsv1.ReadyCondition); c != nil {
		op.Message = c.Message
	}
	for _, s := range o.Status.Steps {
		op.Steps = append(op.Steps, Step{
			ID: s.ID, Type: string(s.Type), Action: string(s.Action), Target: s.Target, Phase: string(s.Phase),
			OperationID: s.OperationID, Backup: s.Backup, Message: s.Message, StartTime: timePtr(s.StartTime), CompletionTime: timePtr(s.CompletionTime),
		})
	}
	op.Preflight = o.Status.Preflight
	for _, lb := range o.Status.LeftBehind {
		op.LeftBehind = append(op.LeftBehind, LeftBehind{Kind: string(lb.Kind), Namespace: lb.Namespace, Name: lb.Name, StepID: lb.StepID, Reason: lb.Reason})
	}
	switch w := o.Status.MaintenanceWindow; {
	case w != nil:
		op.MaintenanceWindow = &EffectiveWindow{MaintenanceWindow: *w.MaintenanceWindow.DeepCopy(), Source: w.Source}
	case o.Spec.MaintenanceWindow != nil:
		// Not seen by the operator yet: the spec's own.
		op.MaintenanceWindow = &EffectiveWindow{MaintenanceWindow: *o.Spec.MaintenanceWindow.DeepCopy(), Source: "spec"}
	}
	op.NextWindowStart = timePtr(o.Status.NextWindowStart)
	if a := o.Status.AwaitingApproval; a != nil {
		op.AwaitingApproval = &AwaitingApproval{Gate: a.Gate, NextStep: a.NextStep, Done: a.Done, Since: timePtr(a.Since)}
	}
	op.Approved = o.Spec.Approved
	if b := o.Status.BlockedBy; b != nil {
		op.BlockedBy = &BlockedBy{StepID: b.StepID, Reason: b.Reason, Message: b.Message, Node: b.Node, Since: timePtr(b.Since)}
		if b.Pod != nil {
			op.BlockedBy.Pod = b.Pod.Namespace + "/" + b.Pod.Name
		}
		if b.PodDisruptionBudget != nil {
			op.BlockedBy.PodDisruptionBudget = b.PodDisruptionBudget.Namespace + "/" + b.PodDisruptionBudget.Name
		}
	}
	return op
}

func timePtr(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// toManifest is the manifest view of an object: what `kubectl apply -f`
// needs to create it again, nothing the API server sets (uid,
// resourceVersion, creationTimestamp, generation, managedFields, status).
func toManifest(o *opsv1.ClusterUpgradeOperation) Manifest {
	m := Manifest{
		APIVersion: opsv1.GroupVersion.String(), Kind: opsv1.ClusterUpgradeOperationKind,
		Metadata: ManifestMetadata{Name: o.Name, Namespace: o.Namespace, Labels: o.Labels, Annotations: o.Annotations},
		Spec:     *o.Spec.DeepCopy(),
	}
	if len(m.Metadata.Annotations) == 0 {
		m.Metadata.Annotations = nil
	}
	return m
}
