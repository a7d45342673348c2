package v1alpha1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFSDestinationProblem(t *testing.T) {
	roots := []string{"/var/backups", "/srv/vm"}
	cases := []struct {
		name  string
		url   string
		roots []string
		want  string // substring of the problem; "" means allowed
	}{
		{"object store is not concerned", "s3://bucket/x", nil, ""},
		{"the root itself", "fs:///var/backups", roots, ""},
		{"below a root", "fs:///srv/vm/a/b", roots, ""},
		{"trailing slash", "fs:///var/backups/", roots, ""},
		{"dot-dot staying inside", "fs:///var/backups/a/../b", roots, ""},
		{"no roots configured", "fs:///var/backups", nil, "configured no backup fs roots"},
		{"outside every root", "fs:///etc", roots, "/var/backups, /srv/vm"},
		{"prefix is not a parent", "fs:///var/backups-other", roots, "must be inside"},
		{"dot-dot escape", "fs:///var/backups/../../etc", roots, "must be inside"},
		{"dot-dot escape to a sibling", "fs:///var/backups/../backups2", roots, "must be inside"},
		{"relative", "fs://var/backups", roots, "absolute path"},
		{"root slash allows all", "fs:///anything", []string{"/"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := FSDestinationProblem(tc.url, tc.roots)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("FSDestinationProblem(%q, %q) = %q, want %q", tc.url, tc.roots, got, tc.want)
			}
		})
	}
}

func TestParseFSRoots(t *testing.T) {
	got, err := ParseFSRoots(" /a/b/ , ,/c")
	if err != nil || strings.Join(got, "|") != "/a/b|/c" {
		t.Fatalf("ParseFSRoots = %q, %v", got, err)
	}
	if got, err := ParseFSRoots(""); err != nil || len(got) != 0 {
		t.Fatalf(`ParseFSRoots("") = %q, %v; want none`, got, err)
	}
	for _, bad := range []string{"relative", "/a/../b", "/ok,rel"} {
		if _, err := ParseFSRoots(bad); err == nil {
			t.Errorf("ParseFSRoots(%q): want an error", bad)
		}
	}
}

func TestCrossNamespaceProblem(t *testing.T) {
	b := &ClusterBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"}}
	for ns, bad := range map[string]bool{"": false, "team-a": false, "team-b": true} {
		b.Spec.VMCluster.Namespace = ns
		if got := b.CrossNamespaceProblem(); (got != "") != bad {
			t.Errorf("namespace %q: CrossNamespaceProblem() = %q", ns, got)
		}
	}
}

func TestIsBackupCredentials(t *testing.T) {
	if IsBackupCredentials(nil) || IsBackupCredentials(map[string]string{BackupCredentialsLabel: "yes"}) {
		t.Fatal("only the value \"true\" is accepted")
	}
	if !IsBackupCredentials(map[string]string{BackupCredentialsLabel: "true"}) {
		t.Fatal("the label with \"true\" is accepted")
	}
}
