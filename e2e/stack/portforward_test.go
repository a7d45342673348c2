package stack

import (
	"testing"

	. "github.com/onsi/gomega"
	kwokv1 "sigs.k8s.io/kwok/pkg/apis/v1alpha1"
)

func TestPodPortForwardSpec(t *testing.T) {
	g := NewWithT(t)
	spec := podPortForwardSpec(portList(map[int]int{8482: 40001, 8400: 40002}))
	g.Expect(spec.Forwards).To(Equal([]kwokv1.Forward{
		{Ports: []int32{8400}, Target: &kwokv1.ForwardTarget{Port: 40002, Address: "127.0.0.1"}},
		{Ports: []int32{8482}, Target: &kwokv1.ForwardTarget{Port: 40001, Address: "127.0.0.1"}},
	}))
	g.Expect(podPortForwardSpec("").Forwards).To(BeEmpty())
	g.Expect(podPortForwardSpec("x=1,8482=127.0.0.1:y").Forwards).To(BeEmpty())
}
