package upgrade

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// policyProvider is a cloud that answers every call with err when set,
// and otherwise as a healthy cloud would: cluster at 1.29, node groups
// "old" (one node) and "new", every operation started and running.
type policyProvider struct{ err error }

func (p *policyProvider) Name() string           { return cloud.Mock }
func (p *policyProvider) NodeGroupLabel() string { return "group" }
func (p *policyProvider) SupportsAddons() bool   { return true }
func (p *policyProvider) DescribeCluster(context.Context, cloud.ClusterRef) (*cloud.Cluster, error) {
	if p.err != nil {
		return nil, p.err
	}
	return &cloud.Cluster{Name: "c", Version: "1.29"}, nil
}
func (p *policyProvider) start() (string, error) {
	if p.err != nil {
		return "", p.err
	}
	return "op-1", nil
}
func (p *policyProvider) StartControlPlaneUpgrade(context.Context, cloud.ClusterRef, string, string) (string, error) {
	return p.start()
}
func (p *policyProvider) ListNodeGroups(context.Context, cloud.ClusterRef) ([]cloud.NodeGroup, error) {
	if p.err != nil {
		return nil, p.err
	}
	return []cloud.NodeGroup{{Name: "old", Version: "1.29", DesiredSize: 1}, {Name: "new", Version: "1.30", DesiredSize: 1}}, nil
}
func (p *policyProvider) StartNodeGroupUpgrade(context.Context, cloud.ClusterRef, string, string, string) (string, error) {
	return p.start()
}
func (p *policyProvider) StartCreateNodeGroup(context.Context, cloud.ClusterRef, cloud.NodeGroup, string) (string, error) {
	return p.start()
}
func (p *policyProvider) StartDeleteNodeGroup(context.Context, cloud.ClusterRef, string, string) (string, error) {
	return p.start()
}
func (p *policyProvider) ListAddons(context.Context, cloud.ClusterRef) ([]cloud.Addon, error) {
	if p.err != nil {
		return nil, p.err
	}
	return []cloud.Addon{{Name: "vpc-cni", Version: "v1"}}, nil
}
func (p *policyProvider) StartAddonUpdate(context.Context, cloud.ClusterRef, cloud.AddonUpdate, string) (string, error) {
	return p.start()
}
func (p *policyProvider) PollOperation(context.Context, cloud.ClusterRef, string) (*cloud.OperationStatus, error) {
	if p.err != nil {
		return nil, p.err
	}
	return &cloud.OperationStatus{State: cloud.OperationRunning}, nil
}

// transientErrors are what a Kubernetes API server (or a client) answers
// while it is unwell, and an error nobody classified: none of them may
// fail a step.
func transientErrors() map[string]error {
	gr := schema.GroupResource{Resource: "nodes"}
	return map[string]error{
		"k8s timeout":            apierrors.NewTimeoutError("request did not complete within 60s", 1),
		"k8s 503":                apierrors.NewServiceUnavailable("the server is currently unable to handle the request"),
		"k8s 500":                apierrors.NewInternalError(errors.New("unexpected EOF")),
		"k8s 429":                apierrors.NewTooManyRequests("too many requests", 1),
		"k8s conflict":           apierrors.NewConflict(gr, "n1", errors.New("the object has been modified")),
		"k8s etcd leader change": apierrors.NewInternalError(errors.New("etcdserver: leader changed")),
		"k8s connection refused": &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/nodes",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}},
		"context deadline": fmt.Errorf("listing nodes: %w", context.DeadlineExceeded),
		"unknown error":    errors.New("something nobody classified"),
	}
}

// cloudErrors are classified cloud errors, with whether they are terminal.
func cloudErrors() map[string]struct {
	err      error
	terminal bool
} {
	mk := func(k cloud.ErrorKind) error { return cloud.Errorf(k, cloud.Mock, "Op", "injected %s error", k) }
	return map[string]struct {
		err      error
		terminal bool
	}{
		"cloud retryable":   {mk(cloud.Retryable), false},
		"cloud permanent":   {mk(cloud.Permanent), true},
		"cloud not found":   {mk(cloud.NotFound), true},
		"cloud unsupported": {mk(cloud.Unsupported), true},
	}
}

// policyOp is a running blue-green operation (with an addon and an in-place
// group) whose steps before the one with action are done; poll=true puts
// that step in flight, waiting on a cloud operation.
func policyOp(action opsv1.StepAction, poll bool) (*opsv1.ClusterUpgradeOperation, int) {
	op := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "op", UID: "uid-1", Generation: 1},
		Spec: opsv1.ClusterUpgradeOperationSpec{
			K8sClusterName: "c", Region: "r", CloudProvider: "mock", TargetVersion: "1.30",
			ClusterAddons: []opsv1.ClusterAddon{{Name: "vpc-cni", Version: "v2"}},
			NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{
				{NodeGroupName: "inplace", Strategy: opsv1.StrategyInPlace},
				{NodeGroupName: "old", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "new", RequiresVMStorageRollout: true,
					BackupBeforeRollout: &opsv1.BackupBeforeRollout{Destination: opsv1.BackupDestination{URL: "s3://b/p"}}},
			},
		},
	}
	started(op)
	idx := -1
	for i := range op.Status.Steps {
		st := &op.Status.Steps[i]
		if st.Action == action {
			idx = i
			break
		}
		st.Phase = opsv1.StepPhaseSucceeded
	}
	if poll {
		st := &op.Status.Steps[idx]
		st.Phase, st.OperationID, st.StartTime = opsv1.StepPhaseRunning, "op-1", &metav1.Time{Time: t0}
	}
	return op, idx
}

// policyReconciler has a Kubernetes client that fails every request with
// k8sErr (nil: none) except the listing of operations (the one-per-cluster
// check, not a step's), and the provider p.
func policyReconciler(t *testing.T, p cloud.Provider, k8sErr error) *Reconciler {
	scheme, err := testenv.NewScheme(opsv1.AddToScheme)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	fail := func() error { return k8sErr }
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&opsv1.ClusterUpgradeOperation{}, opsv1.ClusterNameField, func(o client.Object) []string {
		return []string{o.(*opsv1.ClusterUpgradeOperation).Spec.K8sClusterName}
	}).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := fail(); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ours := list.(*opsv1.ClusterUpgradeOperationList); !ours {
				if err := fail(); err != nil {
					return err
				}
			}
			return c.List(ctx, list, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := fail(); err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := fail(); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := fail(); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	return &Reconciler{Client: c, APIReader: c, Providers: cloud.NewRegistry(p), Now: func() time.Time { return t0.Add(time.Minute) },
		Options: DefaultOptions()}
}

// TestErrorPolicyPerStep injects, into every step kind (and the poll of
// every cloud step in flight), each Kubernetes API error, timeout and
// unknown error where the step talks to Kubernetes, and each cloud error
// where it talks to the cloud: only a Permanent/NotFound/Unsupported cloud
// error fails the step; everything else leaves it running with the error
// in its message and in the Reconciling condition.
func TestErrorPolicyPerStep(t *testing.T) {
	type where struct {
		action opsv1.StepAction
		poll   bool
		// k8s: the step talks to Kubernetes; cloud: to the cloud.
		k8s, cloud bool
	}
	places := []where{
		{action: opsv1.ActionUpgradeControlPlane, cloud: true},
		{action: opsv1.ActionUpgradeControlPlane, poll: true, cloud: true},
		{action: opsv1.ActionUpdateAddon, cloud: true},
		{action: opsv1.ActionUpdateAddon, poll: true, cloud: true},
		{action: opsv1.ActionUpgradeNodeGroup, cloud: true},
		{action: opsv1.ActionUpgradeNodeGroup, poll: true, cloud: true},
		{action: opsv1.ActionCreateNodeGroup, cloud: true},
		{action: opsv1.ActionCreateNodeGroup, poll: true, cloud: true},
		{action: opsv1.ActionWaitNodesReady, k8s: true, cloud: true},
		{action: opsv1.ActionRolloutVMStorage, k8s: true},
		{action: opsv1.ActionCordonNodes, k8s: true, cloud: true},
		{action: opsv1.ActionDrainNodes, k8s: true},
		{action: opsv1.ActionDeleteNodeGroup, cloud: true},
		{action: opsv1.ActionDeleteNodeGroup, poll: true, cloud: true},
		{action: opsv1.ActionBackupVMStorage, k8s: true},
	}
	// Every step kind is covered.
	covered := map[opsv1.StepAction]bool{}
	for _, w := range places {
		covered[w.action] = true
	}
	for a := range stepFuncs {
		NewWithT(t).Expect(covered).To(HaveKey(a), "step kind %s has no error-policy case", a)
	}

	type injected struct {
		name     string
		k8s, cl  error
		terminal bool
	}
	for _, w := range places {
		var cases []injected
		for name, err := range transientErrors() {
			if w.k8s {
				cases = append(cases, injected{name: "kubernetes side: " + name, k8s: err})
			}
			if w.cloud {
				// A provider whose own state lives behind an API (the
				// simulated cloud's, in Kubernetes) may pass such an
				// error through unclassified.
				cases = append(cases, injected{name: "cloud side: " + name, cl: err})
			}
		}
		if w.cloud {
			for name, c := range cloudErrors() {
				cases = append(cases, injected{name: name, cl: c.err, terminal: c.terminal})
			}
		}
		for _, c := range cases {
			name := string(w.action)
			if w.poll {
				name += " (polling)"
			}
			t.Run(name+"/"+c.name, func(t *testing.T) {
				g := NewWithT(t)
				op, idx := policyOp(w.action, w.poll)
				r := policyReconciler(t, &policyProvider{err: c.cl}, c.k8s)
				_, _, _, err := r.act(context.Background(), op)
				step := op.Status.Steps[idx]
				injectedErr := c.k8s
				if injectedErr == nil {
					injectedErr = c.cl
				}
				if w.action == opsv1.ActionDeleteNodeGroup && !w.poll && cloud.IsNotFound(c.cl) {
					// Deleting a group that is gone is done, not failed.
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(step.Phase).To(Equal(opsv1.StepPhaseSucceeded))
					return
				}
				if c.terminal {
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(step.Phase).To(Equal(opsv1.StepPhaseFailed), step.Message)
					g.Expect(step.Message).To(ContainSubstring(injectedErr.Error()))
					g.Expect(op.Status.Phase).To(Equal(opsv1.UpgradePhaseFailed))
					g.Expect(apimeta.IsStatusConditionTrue(op.Status.Conditions, opsv1.StalledCondition)).To(BeTrue())
					return
				}
				g.Expect(step.Phase).NotTo(Equal(opsv1.StepPhaseFailed), step.Message)
				g.Expect(op.Status.Phase).To(Equal(opsv1.UpgradePhaseRunning))
				g.Expect(step.Message).To(ContainSubstring(injectedErr.Error()))
				g.Expect(apimeta.IsStatusConditionTrue(op.Status.Conditions, opsv1.ReconcilingCondition)).To(BeTrue())
				g.Expect(apimeta.FindStatusCondition(op.Status.Conditions, opsv1.ReconcilingCondition).Message).To(ContainSubstring(injectedErr.Error()))
				g.Expect(apimeta.IsStatusConditionFalse(op.Status.Conditions, opsv1.ReadyCondition)).To(BeFalse())
				g.Expect(apimeta.FindStatusCondition(op.Status.Conditions, opsv1.StalledCondition)).To(BeNil())
				if c.name == "cloud retryable" {
					// Waits for the cloud's hint: no error, no backoff growth.
					g.Expect(err).NotTo(HaveOccurred())
				} else {
					// Back to the queue with its backoff (a conflict starts
					// over at once, see skeleton.Result).
					g.Expect(err).To(HaveOccurred())
					g.Expect(strings.Contains(err.Error(), injectedErr.Error())).To(BeTrue())
				}
			})
		}
	}
}
