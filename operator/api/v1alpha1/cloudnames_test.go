package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestClusterNameLabelValue: a name that is a valid label value is kept,
// any other becomes a stable, valid, distinct hash.
func TestClusterNameLabelValue(t *testing.T) {
	for _, name := range []string{"dev-cluster", "Prod_Cluster-01", "myAKS_cluster", strings.Repeat("a", 63)} {
		if got := ClusterNameLabelValue(name); got != name {
			t.Errorf("ClusterNameLabelValue(%q) = %q, want the name", name, got)
		}
	}
	seen := map[string]string{}
	for _, name := range []string{strings.Repeat("a", 64), "Prod_" + strings.Repeat("x", 90), "生产集群-01", "集群", "workers_"} {
		got := ClusterNameLabelValue(name)
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("ClusterNameLabelValue(%q) = %q, not a label value: %v", name, got, errs)
		}
		if !strings.HasPrefix(got, "h-") || got != ClusterNameLabelValue(name) {
			t.Errorf("ClusterNameLabelValue(%q) = %q, want a stable hash", name, got)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("%q and %q share the label %q", name, other, got)
		}
		seen[got] = name
	}
}

// TestNameRules: each provider's rule on its boundary names; unknown
// providers get the union of the rules.
func TestNameRules(t *testing.T) {
	cases := []struct {
		provider CloudProvider
		cluster  bool
		name     string
		ok       bool
	}{
		{CloudProviderEKS, true, "Prod_Cluster-01", true},
		{CloudProviderEKS, true, "0" + strings.Repeat("a", 99), true},
		{CloudProviderEKS, true, "0" + strings.Repeat("a", 100), false},
		{CloudProviderEKS, true, "_prod", false},
		{CloudProviderEKS, false, "NG_1-", true},
		{CloudProviderEKS, false, strings.Repeat("n", 64), false},
		{CloudProviderGKE, true, "prod-1", true},
		{CloudProviderGKE, true, "prod-", false},
		{CloudProviderGKE, true, "Prod", false},
		{CloudProviderGKE, false, "p" + strings.Repeat("o", 39), true},
		{CloudProviderGKE, false, "p" + strings.Repeat("o", 40), false},
		{CloudProviderAKS, true, "myAKS_cluster", true},
		{CloudProviderAKS, true, "myAKS_", false},
		{CloudProviderAKS, false, "userpool1", true},
		{CloudProviderAKS, false, "user-pool", false},
		{CloudProviderAKS, false, "1pool", false},
		{CloudProviderACK, true, "生产集群-01", true},
		{CloudProviderACK, true, "集" + strings.Repeat("群", 62), true},
		{CloudProviderACK, true, "集" + strings.Repeat("群", 63), false},
		{CloudProviderACK, false, "-pool", false},
		{CloudProviderMock, true, "dev-cluster", true},
		{CloudProviderMock, true, "Dev", false},
		{CloudProviderMock, false, "ng_1", false},
		{"openstack", true, "Anything_Goes-集群", true},
		{"openstack", true, "-no", false},
	}
	for _, tc := range cases {
		r, known := NodeGroupNameRule(tc.provider)
		if tc.cluster {
			r, known = ClusterNameRule(tc.provider)
		}
		if known != (tc.provider != "openstack") {
			t.Errorf("%s: known = %t", tc.provider, known)
		}
		msg := r.Check(tc.name)
		if (msg == "") != tc.ok {
			t.Errorf("%s cluster=%t %q: Check = %q, want ok=%t", tc.provider, tc.cluster, tc.name, msg, tc.ok)
		}
		if msg != "" && !strings.HasPrefix(msg, "must be ") {
			t.Errorf("message %q", msg)
		}
	}
}
