package cloud

import (
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestSortVersions(t *testing.T) {
	g := NewWithT(t)
	vs := []string{"1.31.1-aliyun.1", "1.30.10-aliyun.1", "1.30.9-aliyun.2", "1.30.9-aliyun.10", "1.29.3-aliyun.1", "1.30.9-aliyun.1", "1.30"}
	SortVersions(vs)
	g.Expect(vs).To(Equal([]string{"1.29.3-aliyun.1", "1.30", "1.30.9-aliyun.1", "1.30.9-aliyun.2", "1.30.9-aliyun.10", "1.30.10-aliyun.1", "1.31.1-aliyun.1"}))
}

func TestPickVersion(t *testing.T) {
	available := []string{"1.29.3-aliyun.1", "1.30.1-aliyun.1", "1.30.1-aliyun.2", "1.30.2-aliyun.1", "1.30.10-aliyun.1", "1.31.1-aliyun.1"}
	SortVersions(available)
	cases := []struct {
		name, requested, want string
		ok                    bool
	}{
		{"minor to its newest patch", "1.30", "1.30.10-aliyun.1", true},
		{"the current minor", "1.29", "1.29.3-aliyun.1", true},
		{"patch to its newest build", "1.30.1", "1.30.1-aliyun.2", true},
		{"full version available", "1.30.2-aliyun.1", "1.30.2-aliyun.1", true},
		{"full version not available", "1.30.3-aliyun.1", "", false},
		{"full version is not a prefix", "1.30.1-aliyun", "", false},
		{"unknown minor", "1.33", "", false},
		{"no partial component match", "1.3", "", false},
		{"unknown patch", "1.30.3", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := PickVersion(tc.requested, available)
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect(got).To(Equal(tc.want))
		})
	}
	got, ok := PickVersion("1.30", nil)
	NewWithT(t).Expect([]any{got, ok}).To(Equal([]any{"", false}), "nothing available")
}

func FuzzPickVersion(f *testing.F) {
	f.Add("1.30", "1.30.1-aliyun.1,1.30.2-aliyun.1,1.31.1-aliyun.1")
	f.Add("1.30.1-aliyun.1", "1.30.1-aliyun.1")
	f.Add("1.3", "1.30.1-aliyun.1,1.3.0-aliyun.1")
	f.Fuzz(func(t *testing.T, requested, list string) {
		available := strings.Split(list, ",")
		SortVersions(available)
		if !sort.SliceIsSorted(available, func(i, j int) bool { return CompareVersions(available[i], available[j]) < 0 }) {
			t.Fatalf("not sorted: %q", available)
		}
		got, ok := PickVersion(requested, available)
		if !ok {
			for _, v := range available {
				if v == requested {
					t.Fatalf("%q is available but was not picked", requested)
				}
			}
			return
		}
		found := false
		for _, v := range available {
			found = found || v == got
		}
		if !found {
			t.Fatalf("picked %q, not in %q", got, available)
		}
		if got != requested && !strings.HasPrefix(got, requested+".") && !strings.HasPrefix(got, requested+"-") {
			t.Fatalf("picked %q for %q", got, requested)
		}
		for _, v := range available {
			if got != requested && (strings.HasPrefix(v, requested+".") || strings.HasPrefix(v, requested+"-")) && CompareVersions(v, got) > 0 {
				t.Fatalf("picked %q for %q, but %q is newer", got, requested, v)
			}
		}
	})
}

func TestMajorMinor(t *testing.T) {
	cases := []struct {
		in           string
		major, minor int
		ok           bool
	}{
		{"1.30", 1, 30, true},
		{"v1.30.2", 1, 30, true},
		{"1.30.2-eks-a1b2c3", 1, 30, true},
		{"1.30.4-gke.1200", 1, 30, true},
		{"1.31.1-aliyun.1", 1, 31, true},
		{"1.29+k3s1", 1, 29, true},
		{"1.29-eks", 1, 29, true},
		{"1", 0, 0, false},
		{"", 0, 0, false},
		{"one.two", 0, 0, false},
		{"1.x", 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			major, minor, ok := MajorMinor(tc.in)
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect([]int{major, minor}).To(Equal([]int{tc.major, tc.minor}))
		})
	}
}
