package mock_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/conformance"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

var clusters atomic.Int32

// TestConformance runs the provider conformance suite against the mock
// cloud, backed by a real API server (its state lives in ConfigMaps and its
// node groups are Nodes).
func TestConformance(t *testing.T) {
	faults := &mock.Faults{}
	var current *mock.Provider
	var currentRef cloud.ClusterRef
	fx := conformance.Fixture{
		FromVersion: "1.29", TargetVersion: "1.30", GroupA: "ng-a", GroupB: "ng-b", NewGroup: "ng-new",
		Addon: "coredns", AddonFrom: "v1.11.1", AddonTo: "v1.11.3",
	}
	conformance.Run(t, conformance.Harness{
		Fixture: fx,
		New: func(t *testing.T) (cloud.Provider, cloud.ClusterRef) {
			faults = &mock.Faults{}
			current = &mock.Provider{Client: env.Client, Faults: faults, Log: &mock.CallLog{}}
			currentRef = cloud.ClusterRef{Provider: cloud.Mock, Name: fmt.Sprintf("conf-%d", clusters.Add(1)), Region: "local"}
			err := current.Seed(context.Background(), currentRef, mock.ClusterState{
				Version: fx.FromVersion,
				NodeGroups: map[string]*mock.NodeGroupState{
					fx.GroupA: {Size: 2, InstanceTypes: []string{"m5.large"}, Labels: map[string]string{"role": "a"}},
					fx.GroupB: {Size: 2, InstanceTypes: []string{"m5.xlarge"}, Labels: map[string]string{"role": "b"}},
				},
				Addons: map[string]*mock.AddonState{fx.Addon: {Version: fx.AddonFrom, AvailableVersions: []string{fx.AddonFrom, fx.AddonTo}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			return current, currentRef
		},
		Fresh: func(t *testing.T) cloud.Provider {
			return &mock.Provider{Client: env.Client, Faults: faults}
		},
		Inject: func(kind string, n int, permanent bool) {
			k := mock.Throttle
			if permanent {
				k = mock.PermanentError
			}
			faults.Add(mock.Fault{Op: kind, Nth: callsSoFar(current, kind) + 1, Count: n, Kind: k})
		},
	})
}

// callsSoFar counts the calls of a kind the provider has seen.
func callsSoFar(p *mock.Provider, kind string) int {
	n := 0
	for _, c := range p.Log.Calls() {
		if c.Op == kind {
			n++
		}
	}
	return n
}
