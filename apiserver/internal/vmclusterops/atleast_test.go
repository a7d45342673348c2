package vmclusterops

import "testing"

func TestAtLeast(t *testing.T) {
	for _, tc := range []struct {
		a, rv string
		want  bool
	}{
		{"1000", "999", true},
		{"999", "1000", false},
		{"42", "42", true},
		{"x", "x", true},
		{"x", "42", false},
	} {
		if got := atLeast(tc.a, tc.rv); got != tc.want {
			t.Errorf("atLeast(%q, %q) = %v, want %v", tc.a, tc.rv, got, tc.want)
		}
	}
}
