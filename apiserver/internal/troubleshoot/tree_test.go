package troubleshoot_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidbcloud/ops-server/apiserver/internal/troubleshoot"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// The tree goes from the HelmRelease through the VMCluster Helm installed
// to the workloads the VM operator owns, their Pods and PVCs; a vmcluster
// not installed yet has a Missing VMCluster; a Pod that is not ready makes
// it and its StatefulSet Degraded.
func TestResourceTree(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	id := a.vmcluster("vm1")

	tree := a.tree(id)
	g.Expect(tree.Root.Kind).To(Equal("HelmRelease"))
	g.Expect(tree.Root.Name).To(Equal("vm1"))
	g.Expect(tree.Root.Health).To(Equal(troubleshoot.Progressing), "no Flux runs: the release is CREATING")
	g.Expect(tree.Root.Children).To(HaveLen(1))
	g.Expect(tree.Root.Children[0].Kind).To(Equal("VMCluster"))
	g.Expect(tree.Root.Children[0].Health).To(Equal(troubleshoot.Missing))

	pods := installed(t, a.ns, "vm1", 2)
	// Another vmcluster's objects in the same namespace, and a look-alike
	// VMCluster without Helm's marks, stay out of vm1's tree.
	a.vmcluster("vm2")
	installed(t, a.ns, "vm2", 1)

	tree = a.tree("vm1")
	vmcs := find(tree.Root, "VMCluster")
	g.Expect(vmcs).To(HaveLen(1))
	g.Expect(vmcs[0].Name).To(Equal("vm1"))
	g.Expect(vmcs[0].Health).To(Equal(troubleshoot.Healthy))
	sets := find(tree.Root, "StatefulSet")
	g.Expect(sets).To(HaveLen(1))
	g.Expect(sets[0].Name).To(Equal("vmstorage-vm1"))
	g.Expect(sets[0].Health).To(Equal(troubleshoot.Healthy), sets[0].HealthReason)
	g.Expect(*sets[0].Ready).To(Equal(int32(2)))
	g.Expect(*sets[0].Desired).To(Equal(int32(2)))
	g.Expect(find(tree.Root, "Deployment")).To(HaveLen(1))
	g.Expect(find(tree.Root, "ReplicaSet")).To(HaveLen(1))
	g.Expect(find(tree.Root, "Service")).To(HaveLen(1))
	podNodes := find(tree.Root, "Pod")
	g.Expect(podNodes).To(HaveLen(3))
	for _, p := range podNodes {
		g.Expect(p.Health).To(Equal(troubleshoot.Healthy), p.Name+": "+p.HealthReason)
		g.Expect(p.Name).NotTo(ContainSubstring("vm2"))
	}
	pvcs := find(tree.Root, "PersistentVolumeClaim")
	g.Expect(pvcs).To(HaveLen(2))
	g.Expect(pvcs[0].Health).To(Equal(troubleshoot.Healthy))

	// The vmstorage process of one Pod dies: the Pod is not ready.
	p := pods[1]
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	p.Status.ContainerStatuses[0].Ready = false
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	g.Expect(env.Client.Status().Update(context.Background(), p)).To(Succeed())

	tree = a.tree(id)
	for _, n := range find(tree.Root, "Pod") {
		if n.Name == p.Name {
			g.Expect(n.Health).To(Equal(troubleshoot.Degraded))
			g.Expect(n.HealthReason).To(And(ContainSubstring("CrashLoopBackOff"), ContainSubstring("code 137")))
		}
	}
	sets = find(tree.Root, "StatefulSet")
	g.Expect(sets[0].Health).To(Equal(troubleshoot.Degraded))
	g.Expect(sets[0].HealthReason).To(ContainSubstring(p.Name))

	code, b := a.do(http.MethodGet, "no-such-vmcluster/resources", "")
	g.Expect(code).To(Equal(http.StatusNotFound), string(b))
}

// The Pods list: component, node group, restarts, last termination,
// AIP-158 pages.
func TestPods(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	id := a.vmcluster("pv")
	installed(t, a.ns, "pv", 2)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-pv", Labels: map[string]string{mock.NodeGroupLabel: "ng-blue"}}}
	create(t, node)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })

	var names []string
	token := ""
	for range 4 {
		code, b := a.do(http.MethodGet, id+"/pods?page_size=2&page_token="+token, "")
		g.Expect(code).To(Equal(http.StatusOK), string(b))
		var page troubleshoot.PodList
		g.Expect(json.Unmarshal(b, &page)).To(Succeed())
		for _, p := range page.Pods {
			names = append(names, p.Name)
			g.Expect(p.Ready).To(BeTrue())
			g.Expect(p.Restarts).To(Equal(int32(1)))
			g.Expect(p.Containers).To(HaveLen(1))
			g.Expect(p.Containers[0].State).To(Equal("running"))
			g.Expect(p.Containers[0].LastTermination).To(Equal(&troubleshoot.Termination{Reason: "OOMKilled", ExitCode: 137, FinishedAt: p.Containers[0].LastTermination.FinishedAt}))
			if p.Component == "vmstorage" {
				g.Expect(p.NodeGroup).To(Equal("ng-blue"))
				g.Expect(p.Node).To(Equal("node-pv"))
			} else {
				g.Expect(p.Component).To(Equal("vminsert"))
				g.Expect(p.NodeGroup).To(BeEmpty())
			}
		}
		token = page.NextPageToken
		if token == "" {
			break
		}
	}
	g.Expect(names).To(Equal([]string{"vminsert-pv-5d8f-abcde", "vmstorage-pv-0", "vmstorage-pv-1"}))

	code, b := a.do(http.MethodGet, id+"/pods?page_size=-1&page_token=bogus", "")
	g.Expect(code).To(Equal(http.StatusBadRequest))
	g.Expect(string(b)).To(And(ContainSubstring(`"field":"page_size"`), ContainSubstring(`"field":"page_token"`)))
}

// A Pod that is not part of the vmcluster is a 404 for logs and exec,
// whatever exists elsewhere: a Pod of another vmcluster, an unowned Pod
// of the namespace, a Pod of that name in another namespace.
func TestPodOfAnotherVMClusterIsNotFound(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	id := a.vmcluster("m1")
	installed(t, a.ns, "m1", 1)
	a.vmcluster("m2")
	installed(t, a.ns, "m2", 1)
	create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "loose", Namespace: a.ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}})
	other := env.NewNamespace(t)
	create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: other},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}})

	for _, pod := range []string{"vmstorage-m2-0", "loose", "elsewhere", "no-such-pod"} {
		code, b := a.do(http.MethodGet, id+"/pods/"+pod+"/logs", "")
		g.Expect(code).To(Equal(http.StatusNotFound), pod+": "+string(b))
		g.Expect(string(b)).To(ContainSubstring(troubleshoot.ReasonPodNotFound))
		code, b = a.do(http.MethodPost, id+"/pods/"+pod+"/exec", `{"command":["ls"]}`)
		g.Expect(code).To(Equal(http.StatusNotFound), pod+": "+string(b))
		g.Expect(string(b)).To(ContainSubstring(troubleshoot.ReasonPodNotFound))
	}
	// A container the Pod lacks is a 400 naming the field.
	code, b := a.do(http.MethodGet, id+"/pods/vmstorage-m1-0/logs?container=nope", "")
	g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
	g.Expect(string(b)).To(ContainSubstring(`"field":"container"`))
}

// Exec and logs requests are validated (one violation per bad field)
// before anything is looked up; the allowlist refuses other commands.
func TestValidation(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t, "ls", "cat")
	id := a.vmcluster("val")
	installed(t, a.ns, "val", 1)

	code, b := a.do(http.MethodPost, id+"/pods/vmstorage-val-0/exec", `{"command":[],"timeoutSeconds":9999}`)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
	g.Expect(string(b)).To(And(ContainSubstring(`"field":"command"`), ContainSubstring(`"field":"timeoutSeconds"`)))
	code, b = a.do(http.MethodPost, id+"/pods/vmstorage-val-0/exec", `{"command":["ls"],"shell":true}`)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
	g.Expect(string(b)).To(ContainSubstring(`"field":"shell"`))
	code, b = a.do(http.MethodPost, id+"/pods/vmstorage-val-0/exec", `{"command":["sh","-c","rm -rf /storage"]}`)
	g.Expect(code).To(Equal(http.StatusForbidden), string(b))
	g.Expect(string(b)).To(ContainSubstring(troubleshoot.ReasonCommandNotAllowed))

	code, b = a.do(http.MethodGet, id+"/pods/vmstorage-val-0/logs?tailLines=0&sinceSeconds=x&previous=maybe&limitBytes=99999999999", "")
	g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
	for _, f := range []string{"tailLines", "sinceSeconds", "previous", "limitBytes"} {
		g.Expect(string(b)).To(ContainSubstring(`"field":"`+f+`"`), f)
	}
}
