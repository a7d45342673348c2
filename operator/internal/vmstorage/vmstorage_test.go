package vmstorage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// env is the control plane shared by every test, with the VMCluster CRD of
// the VictoriaMetrics operator installed from crds/; each test works in a
// namespace of its own. No VictoriaMetrics operator, StatefulSet controller
// or kubelet runs: tests write the status those would.
var env *testenv.Environment

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

const (
	vmcName   = "vmc"
	stsName   = "vmstorage-vmc" // the VM operator's name for the vmstorage StatefulSet
	groupKey  = "node-group.test/name"
	oldGroup  = "old"
	newGroup  = "new"
	nsMarker  = "NS"
	stsLabel  = "app.kubernetes.io/name"
	stsApp    = "vmstorage"
	revOld    = "vmstorage-vmc-old"
	revNew    = "vmstorage-vmc-new"
	baseSpec  = `{"retentionPeriod":"1","vmstorage":{"replicaCount":2,"nodeSelector":{"node-group.test/name":"old"}}}`
	newGroupV = `{"vmstorage":{"nodeSelector":{"node-group.test/name":"new"}}}`
)

// createVMCluster creates VMCluster ns/vmc with baseSpec.
func createVMCluster(g Gomega, ns string) *unstructured.Unstructured {
	vmc := vmstorage.NewVMCluster()
	vmc.SetNamespace(ns)
	vmc.SetName(vmcName)
	var spec map[string]any
	g.Expect(json.Unmarshal([]byte(baseSpec), &spec)).To(Succeed())
	vmc.Object["spec"] = spec
	g.Expect(env.Client.Create(context.Background(), vmc)).To(Succeed())
	return vmc
}

func getVMCluster(g Gomega, ns string) *unstructured.Unstructured {
	vmc := vmstorage.NewVMCluster()
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: vmcName}, vmc)).To(Succeed())
	return vmc
}

// setVMClusterStatus writes the status the VictoriaMetrics operator would.
func setVMClusterStatus(g Gomega, ns string, observed int64, updateStatus, reason string) {
	vmc := getVMCluster(g, ns)
	status := map[string]any{"observedGeneration": observed}
	if updateStatus != "" {
		status["updateStatus"] = updateStatus
	}
	if reason != "" {
		status["reason"] = reason
	}
	vmc.Object["status"] = status
	g.Expect(env.Client.Status().Update(context.Background(), vmc)).To(Succeed())
}

func TestPatchVMCluster(t *testing.T) {
	type call struct {
		overlay     string
		generation  int64
		changed     bool
		errContains string
	}
	cases := []struct {
		name  string
		calls []call
		// spec is the VMCluster's spec afterwards.
		spec string
	}{
		{
			name: "a new value changes the spec, merged into it; the same patch again changes nothing",
			calls: []call{
				{overlay: newGroupV, generation: 2, changed: true},
				{overlay: newGroupV, generation: 2, changed: false},
			},
			spec: `{"retentionPeriod":"1","vmstorage":{"replicaCount":2,"nodeSelector":{"node-group.test/name":"new"}}}`,
		},
		{
			name:  "values the spec already has change nothing",
			calls: []call{{overlay: `{"retentionPeriod":"1","vmstorage":{"replicaCount":2}}`, generation: 1}},
			spec:  baseSpec,
		},
		{
			name:  "an empty overlay changes nothing",
			calls: []call{{overlay: `{}`, generation: 1}, {overlay: ``, generation: 1}, {overlay: " \n", generation: 1}},
			spec:  baseSpec,
		},
		{
			name:  "null deletes a field, lists are replaced",
			calls: []call{{overlay: `{"vmstorage":{"nodeSelector":null,"extraArgs":{"dedup.minScrapeInterval":"1ms"}},"imagePullSecrets":[{"name":"b"}]}`, generation: 2, changed: true}},
			spec:  `{"retentionPeriod":"1","imagePullSecrets":[{"name":"b"}],"vmstorage":{"replicaCount":2,"extraArgs":{"dedup.minScrapeInterval":"1ms"}}}`,
		},
		{
			name: "successive changes",
			calls: []call{
				{overlay: `{"retentionPeriod":"2"}`, generation: 2, changed: true},
				{overlay: `{"retentionPeriod":"3"}`, generation: 3, changed: true},
			},
			spec: `{"retentionPeriod":"3","vmstorage":{"replicaCount":2,"nodeSelector":{"node-group.test/name":"old"}}}`,
		},
		{
			name: "an overlay that is not a JSON object is refused before any call",
			calls: []call{
				{overlay: `null`, errContains: "must be a JSON object"},
				{overlay: `[{"a":1}]`, errContains: "must be a JSON object"},
				{overlay: `"x"`, errContains: "must be a JSON object"},
				{overlay: `{"retentionPeriod":`, errContains: "must be a JSON object"},
			},
			spec: baseSpec,
		},
		{
			name:  "the CRD's schema rejects a wrong type",
			calls: []call{{overlay: `{"vmstorage":{"replicaCount":"two"}}`, errContains: "spec.vmstorage.replicaCount"}},
			spec:  baseSpec,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := env.NewNamespace(t)
			createVMCluster(g, ns)
			// The VM operator's status must survive a spec patch.
			setVMClusterStatus(g, ns, 1, vmstorage.UpdateStatusOperational, "")
			key := types.NamespacedName{Namespace: ns, Name: vmcName}
			for i, c := range tc.calls {
				gen, changed, err := vmstorage.PatchVMCluster(ctx, env.Client, key, []byte(c.overlay))
				if c.errContains != "" {
					g.Expect(err).To(MatchError(ContainSubstring(c.errContains)), "call %d", i)
					continue
				}
				g.Expect(err).NotTo(HaveOccurred(), "call %d", i)
				g.Expect(gen).To(Equal(c.generation), "call %d: generation", i)
				g.Expect(changed).To(Equal(c.changed), "call %d: changed", i)
			}
			vmc := getVMCluster(g, ns)
			got, err := json.Marshal(vmc.Object["spec"])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(MatchJSON(tc.spec))
			g.Expect(vmc.Object["status"]).To(HaveKeyWithValue("updateStatus", vmstorage.UpdateStatusOperational))
		})
	}

	t.Run("a missing VMCluster is an error", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := vmstorage.PatchVMCluster(context.Background(), env.Client,
			types.NamespacedName{Namespace: env.NewNamespace(t), Name: vmcName}, []byte(newGroupV))
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring("patching the spec of VMCluster")))
	})
}

// vmcState is the VMCluster a case starts from.
type vmcState struct {
	// bumps are spec changes after creation: generation = 1 + bumps.
	bumps        int
	observed     int64
	updateStatus string
	reason       string
}

// stsState is the vmstorage StatefulSet a case starts from; its generation
// is 1.
type stsState struct {
	strategy                        appsv1.StatefulSetUpdateStrategyType
	observed                        int64
	replicas, updated, ready        int32
	currentRevision, updateRevision string
}

// rolledOut is a StatefulSet the controller has fully rolled out.
func rolledOut(strategy appsv1.StatefulSetUpdateStrategyType) *stsState {
	return &stsState{strategy: strategy, observed: 1, replicas: 2, updated: 2, ready: 2, currentRevision: revNew, updateRevision: revNew}
}

func (s stsState) with(mut func(*stsState)) *stsState {
	mut(&s)
	return &s
}

// testPod is a vmstorage pod; node is "old-0", "old-1", "new-0", "new-1"
// (Nodes of the old and new group), "gone" (a Node that does not exist)
// or "" (not scheduled).
type testPod struct{ name, node string }

var (
	onNew = []testPod{{"vmstorage-vmc-0", "new-0"}, {"vmstorage-vmc-1", "new-1"}}
	onOld = []testPod{{"vmstorage-vmc-0", "old-0"}, {"vmstorage-vmc-1", "old-1"}}
)

func TestRolloutStatus(t *testing.T) {
	operational := vmcState{bumps: 1, observed: 2, updateStatus: vmstorage.UpdateStatusOperational}
	const (
		vmcOK = "VMCluster NS/vmc is operational at generation 2"
		stsOK = "StatefulSet NS/vmstorage-vmc rolled out to revision vmstorage-vmc-new (2/2 ready)"
		podOK = "all 2 vmstorage pods on node group new"
	)
	cases := []struct {
		name          string
		vmc           vmcState
		minGeneration int64
		sts           *stsState // nil: no StatefulSet
		pods          []testPod
		placement     bool
		want          vmstorage.Rollout // Message with NS for the namespace
	}{
		{
			name: "done: operational, rolled out, every pod on the new group",
			vmc:  operational, minGeneration: 2, sts: rolledOut(appsv1.OnDeleteStatefulSetStrategyType), pods: onNew, placement: true,
			want: vmstorage.Rollout{VMClusterOperational: true, StatefulSetRolledOut: true, Done: true, Message: vmcOK + "; " + stsOK + "; " + podOK},
		},
		{
			name: "the VM operator has not reconciled the patched generation",
			vmc:  vmcState{bumps: 1, observed: 1, updateStatus: vmstorage.UpdateStatusOperational}, minGeneration: 2,
			sts: rolledOut(appsv1.OnDeleteStatefulSetStrategyType), pods: onOld, placement: true,
			want: vmstorage.Rollout{
				StatefulSetRolledOut: true, PodsOnOldNodes: []string{"vmstorage-vmc-0", "vmstorage-vmc-1"},
				Message: "VMCluster NS/vmc: the VictoriaMetrics operator has not reconciled generation 2 yet (observed 1); " +
					"2/2 vmstorage pods not on node group new: vmstorage-vmc-0 (node NS-old-0), vmstorage-vmc-1 (node NS-old-1)",
			},
		},
		{
			name: "a minimum generation above the current one is waited for",
			vmc:  operational, minGeneration: 3, sts: rolledOut(appsv1.OnDeleteStatefulSetStrategyType), pods: onNew, placement: true,
			want: vmstorage.Rollout{StatefulSetRolledOut: true, Message: "VMCluster NS/vmc: the VictoriaMetrics operator has not reconciled generation 3 yet (observed 2)"},
		},
		{
			name: "a later change of the VMCluster is waited for too",
			vmc:  vmcState{bumps: 2, observed: 2, updateStatus: vmstorage.UpdateStatusOperational}, minGeneration: 2,
			sts: rolledOut(appsv1.OnDeleteStatefulSetStrategyType), pods: onNew, placement: true,
			want: vmstorage.Rollout{StatefulSetRolledOut: true, Message: "VMCluster NS/vmc: the VictoriaMetrics operator has not reconciled generation 3 yet (observed 2)"},
		},
		{
			name: "expanding",
			vmc:  vmcState{bumps: 1, observed: 2, updateStatus: "expanding"}, minGeneration: 2,
			sts: rolledOut(appsv1.OnDeleteStatefulSetStrategyType), pods: onNew, placement: true,
			want: vmstorage.Rollout{StatefulSetRolledOut: true, Message: "VMCluster NS/vmc is expanding"},
		},
		{
			name: "failed, with the VM operator's reason",
			vmc:  vmcState{bumps: 1, observed: 2, updateStatus: "failed", reason: "cannot wait for pod ready state"}, minGeneration: 2,
			sts: rolledOut(appsv1.OnDeleteStatefulSetStrategyType), pods: onNew, placement: true,
			want: vmstorage.Rollout{StatefulSetRolledOut: true, Message: "VMCluster NS/vmc is failed: cannot wait for pod ready state"},
		},
		{
			name: "no update status",
			vmc:  vmcState{bumps: 1, observed: 2}, minGeneration: 2,
			sts: rolledOut(appsv1.OnDeleteStatefulSetStrategyType), pods: onNew, placement: true,
			want: vmstorage.Rollout{StatefulSetRolledOut: true, Message: "VMCluster NS/vmc has no update status yet"},
		},
		{
			name: "the StatefulSet controller has not observed the StatefulSet",
			vmc:  operational, minGeneration: 2, pods: onNew, placement: true,
			sts:  rolledOut(appsv1.OnDeleteStatefulSetStrategyType).with(func(s *stsState) { s.observed = 0 }),
			want: vmstorage.Rollout{VMClusterOperational: true, Message: "StatefulSet NS/vmstorage-vmc: the StatefulSet controller has not observed generation 1 yet (observed 0)"},
		},
		{
			name: "no update revision yet",
			vmc:  operational, minGeneration: 2, pods: onNew, placement: true,
			sts:  rolledOut(appsv1.RollingUpdateStatefulSetStrategyType).with(func(s *stsState) { s.currentRevision, s.updateRevision = "", "" }),
			want: vmstorage.Rollout{VMClusterOperational: true, Message: "StatefulSet NS/vmstorage-vmc has no update revision yet"},
		},
		{
			name: "one replica not updated yet",
			vmc:  operational, minGeneration: 2, placement: true,
			pods: []testPod{{"vmstorage-vmc-0", "old-0"}, {"vmstorage-vmc-1", "new-1"}},
			sts:  rolledOut(appsv1.OnDeleteStatefulSetStrategyType).with(func(s *stsState) { s.updated, s.currentRevision = 1, revOld }),
			want: vmstorage.Rollout{
				VMClusterOperational: true, PodsOnOldNodes: []string{"vmstorage-vmc-0"},
				Message: "StatefulSet NS/vmstorage-vmc: 1/2 replicas updated to revision vmstorage-vmc-new, 2 ready, 2 exist; " +
					"1/2 vmstorage pods not on node group new: vmstorage-vmc-0 (node NS-old-0)",
			},
		},
		{
			name: "an updated replica not ready yet, its pod not scheduled",
			vmc:  operational, minGeneration: 2, placement: true,
			pods: []testPod{{"vmstorage-vmc-0", "new-0"}, {"vmstorage-vmc-1", ""}},
			sts:  rolledOut(appsv1.OnDeleteStatefulSetStrategyType).with(func(s *stsState) { s.ready = 1 }),
			want: vmstorage.Rollout{
				VMClusterOperational: true, PodsOnOldNodes: []string{"vmstorage-vmc-1"},
				Message: "StatefulSet NS/vmstorage-vmc: 2/2 replicas updated to revision vmstorage-vmc-new, 1 ready, 2 exist; " +
					"1/2 vmstorage pods not on node group new: vmstorage-vmc-1 (not scheduled)",
			},
		},
		{
			name: "RollingUpdate: the current revision is not promoted yet",
			vmc:  operational, minGeneration: 2, pods: onNew, placement: true,
			sts:  rolledOut(appsv1.RollingUpdateStatefulSetStrategyType).with(func(s *stsState) { s.currentRevision = revOld }),
			want: vmstorage.Rollout{VMClusterOperational: true, Message: "StatefulSet NS/vmstorage-vmc: current revision vmstorage-vmc-old is not the update revision vmstorage-vmc-new yet"},
		},
		{
			name: "OnDelete: a stale current revision is accepted once every replica is updated and ready",
			vmc:  operational, minGeneration: 2, pods: onNew, placement: true,
			sts:  rolledOut(appsv1.OnDeleteStatefulSetStrategyType).with(func(s *stsState) { s.currentRevision = revOld }),
			want: vmstorage.Rollout{VMClusterOperational: true, StatefulSetRolledOut: true, Done: true, Message: vmcOK + "; " + stsOK + "; " + podOK},
		},
		{
			name: "RollingUpdate: done",
			vmc:  operational, minGeneration: 2, pods: onNew, placement: true,
			sts:  rolledOut(appsv1.RollingUpdateStatefulSetStrategyType),
			want: vmstorage.Rollout{VMClusterOperational: true, StatefulSetRolledOut: true, Done: true, Message: vmcOK + "; " + stsOK + "; " + podOK},
		},
		{
			name: "no StatefulSet",
			vmc:  operational, minGeneration: 2, pods: onNew, placement: true,
			want: vmstorage.Rollout{VMClusterOperational: true, Message: "StatefulSet NS/vmstorage-vmc does not exist; vmstorage pods not on node group new yet"},
		},
		{
			name: "pods on old nodes block only when placement is required",
			vmc:  operational, minGeneration: 2, sts: rolledOut(appsv1.OnDeleteStatefulSetStrategyType),
			pods: []testPod{{"vmstorage-vmc-0", "gone"}, {"vmstorage-vmc-1", "old-1"}},
			want: vmstorage.Rollout{
				VMClusterOperational: true, StatefulSetRolledOut: true, PodsOnOldNodes: []string{"vmstorage-vmc-0", "vmstorage-vmc-1"}, Done: true,
				Message: vmcOK + "; " + stsOK,
			},
		},
		{
			name: "pods on old nodes, or on a Node that is gone, when placement is required",
			vmc:  operational, minGeneration: 2, sts: rolledOut(appsv1.OnDeleteStatefulSetStrategyType), placement: true,
			pods: []testPod{{"vmstorage-vmc-0", "gone"}, {"vmstorage-vmc-1", "old-1"}, {"vmstorage-vmc-2", "new-0"}},
			want: vmstorage.Rollout{
				VMClusterOperational: true, StatefulSetRolledOut: true, PodsOnOldNodes: []string{"vmstorage-vmc-0", "vmstorage-vmc-1"},
				Message: "2/3 vmstorage pods not on node group new: vmstorage-vmc-0 (node NS-gone), vmstorage-vmc-1 (node NS-old-1)",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := env.NewNamespace(t)
			createNodes(t, ns)
			createVMCluster(g, ns)
			for i := range tc.vmc.bumps {
				patch := fmt.Appendf(nil, `{"spec":{"retentionPeriod":"%d"}}`, i+2)
				g.Expect(env.Client.Patch(ctx, getVMCluster(g, ns), client.RawPatch(types.MergePatchType, patch))).To(Succeed())
			}
			setVMClusterStatus(g, ns, tc.vmc.observed, tc.vmc.updateStatus, tc.vmc.reason)
			if tc.sts != nil {
				createStatefulSet(g, ns, *tc.sts)
			}
			for _, p := range tc.pods {
				node := ""
				if p.node != "" {
					node = ns + "-" + p.node
				}
				createPod(g, ns, p.name, node, map[string]string{stsLabel: stsApp})
			}
			// Not selected by the StatefulSet: never reported.
			createPod(g, ns, "vmselect-vmc-0", ns+"-old-0", map[string]string{stsLabel: "vmselect"})

			got, err := vmstorage.RolloutStatus(ctx, env.Client,
				types.NamespacedName{Namespace: ns, Name: vmcName}, tc.minGeneration,
				types.NamespacedName{Namespace: ns, Name: stsName}, groupKey, newGroup, tc.placement)
			g.Expect(err).NotTo(HaveOccurred())
			want := tc.want
			want.Message = strings.ReplaceAll(want.Message, nsMarker, ns)
			g.Expect(*got).To(Equal(want))
		})
	}

	t.Run("errors", func(t *testing.T) {
		ns := env.NewNamespace(t)
		createVMCluster(NewWithT(t), ns)
		for _, tc := range []struct {
			name, vmcluster, label, group string
			placement                     bool
			err                           string
		}{
			{name: "no VMCluster", vmcluster: "missing", label: groupKey, group: newGroup, err: `getting VMCluster ` + ns + `/missing`},
			{name: "placement without a label", vmcluster: vmcName, group: newGroup, placement: true, err: "node group label"},
			{name: "placement without a group", vmcluster: vmcName, label: groupKey, placement: true, err: "node group label"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := vmstorage.RolloutStatus(context.Background(), env.Client,
					types.NamespacedName{Namespace: ns, Name: tc.vmcluster}, 1,
					types.NamespacedName{Namespace: ns, Name: stsName}, tc.label, tc.group, tc.placement)
				NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.err)))
			})
		}
	})
}

// createNodes creates the Nodes <ns>-old-0/1 and <ns>-new-0/1, labelled
// with their node group, and deletes them after the test.
func createNodes(t *testing.T, ns string) {
	g := NewWithT(t)
	for _, group := range []string{oldGroup, newGroup} {
		for i := range 2 {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("%s-%s-%d", ns, group, i),
				Labels: map[string]string{groupKey: group},
			}}
			g.Expect(env.Client.Create(context.Background(), node)).To(Succeed())
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
		}
	}
}

// createStatefulSet creates the vmstorage StatefulSet with 2 replicas and
// writes the status the StatefulSet controller would.
func createStatefulSet(g Gomega, ns string, s stsState) {
	ctx := context.Background()
	labels := map[string]string{stsLabel: stsApp}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: stsName},
		Spec: appsv1.StatefulSetSpec{
			Replicas:       new(int32(2)),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			ServiceName:    stsName,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: s.strategy},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "vmstorage", Image: "victoriametrics/vmstorage"}}},
			},
		},
	}
	g.Expect(env.Client.Create(ctx, sts)).To(Succeed())
	g.Expect(sts.Generation).To(Equal(int64(1)))
	sts.Status = appsv1.StatefulSetStatus{
		ObservedGeneration: s.observed,
		Replicas:           s.replicas,
		UpdatedReplicas:    s.updated,
		ReadyReplicas:      s.ready,
		AvailableReplicas:  s.ready,
		CurrentRevision:    s.currentRevision,
		UpdateRevision:     s.updateRevision,
	}
	if s.currentRevision == s.updateRevision {
		sts.Status.CurrentReplicas = s.updated
	}
	g.Expect(env.Client.Status().Update(ctx, sts)).To(Succeed())
}

// createPod creates a pod bound to node ("" leaves it unscheduled).
func createPod(g Gomega, ns, name, node string, labels map[string]string) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
	g.Expect(env.Client.Create(context.Background(), pod)).To(Succeed())
}
