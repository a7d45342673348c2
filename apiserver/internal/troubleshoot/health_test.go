package troubleshoot

import (
	"errors"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodHealth(t *testing.T) {
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	notReady := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	crashed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}
	cases := []struct {
		name   string
		status corev1.PodStatus
		health Health
		reason string
	}{
		{"running and ready", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{ready},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true, State: running}}}, Healthy, ""},
		{"pending", corev1.PodStatus{Phase: corev1.PodPending}, Progressing, "phase Pending"},
		{"crash loop while pending", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "c",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, LastTerminationState: crashed}}},
			Degraded, "container c: CrashLoopBackOff (last exit: Error, code 1)"},
		{"running, container not ready", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{notReady},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", State: running}}}, Degraded, "container c not ready"},
		{"running, ready condition false", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{notReady},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true, State: running}}}, Degraded, "not ready: ContainersNotReady"},
		{"failed", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}, Degraded, "failed Evicted"},
		{"image pull", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "c",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}}, Degraded, "container c: ImagePullBackOff"},
		{"container creating", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "c",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}, Progressing, "phase Pending"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			h, r := PodHealth(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: tc.status})
			g.Expect(h).To(Equal(tc.health))
			g.Expect(r).To(Equal(tc.reason))
		})
	}
}

func TestWorkloadHealth(t *testing.T) {
	g := NewWithT(t)
	h, _ := workloadHealth(2, 2, 3, 3, 3, nil)
	g.Expect(h).To(Equal(Healthy))
	h, r := workloadHealth(3, 2, 3, 3, 3, nil)
	g.Expect(h).To(Equal(Progressing))
	g.Expect(r).To(ContainSubstring("generation"))
	h, r = workloadHealth(2, 2, 3, 1, 3, nil)
	g.Expect(h).To(Equal(Progressing))
	g.Expect(r).To(Equal("1 of 3 replicas updated"))
	h, r = workloadHealth(2, 2, 3, 3, 2, []Node{{Name: "p-0", Health: Healthy}, {Name: "p-1", Health: Degraded, HealthReason: "oom"}})
	g.Expect(h).To(Equal(Degraded))
	g.Expect(r).To(Equal("2 of 3 replicas ready; Pod p-1: oom"))
}

func TestValidateExec(t *testing.T) {
	g := NewWithT(t)
	req := ExecRequest{Command: []string{"/bin/ls", "/storage"}}
	g.Expect(ValidateExec(&req, nil)).To(BeNil())
	g.Expect(req.TimeoutSeconds).To(Equal(30))
	g.Expect(ValidateExec(&ExecRequest{Command: []string{"/tmp/x/ls"}}, []string{"ls"})).NotTo(BeNil(), "only exact names are allowed")
	err := ValidateExec(&ExecRequest{Command: []string{"rm", "-rf", "/"}}, []string{"ls", "cat"})
	g.Expect(err).NotTo(BeNil())
	g.Expect(err.Code).To(Equal(403))
	g.Expect(err.Reason).To(Equal(ReasonCommandNotAllowed))
	err = ValidateExec(&ExecRequest{Command: make([]string, 65), TimeoutSeconds: 301}, nil)
	g.Expect(err).NotTo(BeNil())
	g.Expect(err.Code).To(Equal(400))
	g.Expect(err.Violations).To(HaveLen(2))
}

func TestLimitedBuffer(t *testing.T) {
	g := NewWithT(t)
	b := &limitedBuffer{max: 5}
	n, err := b.Write([]byte("abc"))
	g.Expect(n, err).To(Equal(3))
	n, err = b.Write([]byte("defgh"))
	g.Expect(n, err).To(Equal(5))
	g.Expect(b.buf.String()).To(Equal("abcde"))
	g.Expect(b.truncated).To(BeTrue())
}

func FuzzParseLogs(f *testing.F) {
	f.Add("1", "60", "true", "1024")
	f.Add("-1", "x", "maybe", "99999999999")
	f.Fuzz(func(t *testing.T, tail, since, follow, limit string) {
		req, err := ParseLogs(url.Values{"tailLines": {tail}, "sinceSeconds": {since}, "follow": {follow}, "limitBytes": {limit}}, 1<<20)
		if err != nil {
			if err.Code != 400 {
				t.Fatalf("code %d", err.Code)
			}
			return
		}
		if req.LimitBytes < 1 || req.LimitBytes > 1<<20 || (req.TailLines != nil && *req.TailLines < 1) || (req.SinceSeconds != nil && *req.SinceSeconds < 1) {
			t.Fatalf("accepted out of range: %+v", req)
		}
	})
}

func FuzzValidateExec(f *testing.F) {
	f.Add("ls", "/storage", 10)
	f.Add("", "", -1)
	f.Fuzz(func(t *testing.T, cmd, arg string, timeout int) {
		req := ExecRequest{Command: []string{cmd, arg}, TimeoutSeconds: timeout}
		if err := ValidateExec(&req, []string{"ls"}); err != nil {
			return
		}
		if cmd != "ls" {
			t.Fatalf("allowed %q", cmd)
		}
		if req.TimeoutSeconds < 1 || req.TimeoutSeconds > 300 {
			t.Fatalf("timeout %d", req.TimeoutSeconds)
		}
	})
}

func TestPlainExitStatus(t *testing.T) {
	g := NewWithT(t)
	for msg, want := range map[string]int{
		"cmd wait: sh -c exit 3: exit status 3":       3,
		"exit status 127":                             127,
		"cmd wait: false: exit status 1\nsome stderr": 1,
	} {
		code, ok := plainExitStatus(errors.New(msg))
		g.Expect(ok).To(BeTrue(), msg)
		g.Expect(code).To(Equal(want), msg)
	}
	for _, msg := range []string{"container not found", "exit status 3000", "my exit status 3 is fine", "exit status 300"} {
		_, ok := plainExitStatus(errors.New(msg))
		g.Expect(ok).To(BeFalse(), msg)
	}
}
