package bootstrap

import (
	"fmt"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// FuzzDecide: for any declaration (names, charts and dependsOn drawn from
// small alphabets, so that duplicates, cycles and dangling references
// occur) and any existing HelmReleases, Decide never panics, and a plan
// it returns never both applies and deletes a name, never deletes a
// declared component, never deletes a vmcluster without allowDataRemoval
// and never touches a HelmRelease of another stack.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5}, []byte{1, 2, 3}, false)
	f.Add([]byte{7, 7, 7}, []byte{}, true)
	f.Fuzz(func(t *testing.T, decl, existing []byte, allow bool) {
		names := []string{"a", "b", "c", "d"}
		charts := []string{"vmcluster", "vmagent", "vm-operator"}
		stack := &opsv1.ObservabilityStack{Spec: opsv1.ObservabilityStackSpec{AllowDataRemoval: allow}}
		stack.Name, stack.Namespace = "s", "ns"
		for i := 0; i+1 < len(decl) && len(stack.Spec.Components) < 8; i += 2 {
			c := opsv1.StackComponent{Name: names[int(decl[i])%len(names)], Chart: charts[int(decl[i+1])%len(charts)]}
			if decl[i+1]&0x80 != 0 {
				c.DependsOn = []string{names[int(decl[i+1]>>3)%len(names)]}
			}
			stack.Spec.Components = append(stack.Spec.Components, c)
		}
		hrs := map[string]*helmv2.HelmRelease{}
		for i := 0; i < len(existing) && i < 8; i++ {
			owner := "s"
			if existing[i]&0x40 != 0 {
				owner = "other"
			}
			name := names[int(existing[i])%len(names)]
			hrs[name] = existingHR(name, charts[int(existing[i]>>2)%len(charts)], owner)
		}
		p, err := Decide(stack, hrs, Config{RepositoryURL: "http://127.0.0.1:1"})
		if err != nil {
			return
		}
		applied := map[string]bool{}
		for _, hr := range p.Apply {
			if applied[hr.Name] {
				t.Fatalf("%s applied twice", hr.Name)
			}
			applied[hr.Name] = true
			if cur := hrs[hr.Name]; cur != nil && cur.Labels[LabelStack] != "s" {
				t.Fatalf("took over HelmRelease %s of %q", hr.Name, cur.Labels[LabelStack])
			}
		}
		for _, name := range p.Delete {
			hr := hrs[name]
			switch {
			case applied[name]:
				t.Fatalf("%s applied and deleted", name)
			case declared(stack, name):
				t.Fatalf("declared %s deleted", name)
			case hr.Labels[LabelStack] != "s":
				t.Fatalf("deleted %s of another stack", name)
			case chartOf(hr) == opsv1.DataBearingChart && !allow:
				t.Fatalf("deleted vmcluster %s without allowDataRemoval", name)
			}
		}
		if got := fmt.Sprint(len(p.Apply) + len(p.Conflicts) + countDeclaredRefused(stack, p)); got != fmt.Sprint(len(stack.Spec.Components)) {
			t.Fatalf("every declared component is applied, refused or in conflict: %d applied, %d conflicts, %d refused of %d", len(p.Apply), len(p.Conflicts), countDeclaredRefused(stack, p), len(stack.Spec.Components))
		}
	})
}

func countDeclaredRefused(stack *opsv1.ObservabilityStack, p Plan) int {
	n := 0
	for name := range p.Refused {
		if declared(stack, name) {
			n++
		}
	}
	return n
}
