package manager

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/tidbcloud/ops-server/operator/internal/controller/backup"
)

func TestBackupRunnerFlags(t *testing.T) {
	g := NewWithT(t)
	o := DefaultOptions()
	g.Expect(o.BackupRunner).To(Equal(BackupRunnerJob), "production is the default")
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	g.Expect(fs.Parse([]string{
		"--backup-runner=local", "--backup-local-state-dir=/s/runner",
		"--backup-local-storage-root=/s/vmstorage", "--vmbackup-binary=/bin/vmbackup",
		"--restore-runner=job",
	})).To(Succeed())
	g.Expect(o.BackupRunner).To(Equal(BackupRunnerLocal))
	g.Expect(o.RestoreRunner).To(Equal(RestoreRunnerJob))
	g.Expect(o.BackupLocal).To(Equal(backup.LocalModeOptions{StateDir: "/s/runner", StorageRoot: "/s/vmstorage", VMBackupBinary: "/bin/vmbackup"}))
}

func TestBackupFSRootsFlag(t *testing.T) {
	g := NewWithT(t)
	o := DefaultOptions()
	g.Expect(o.Backup.FSRoots).To(BeEmpty(), "no fs:// root by default")
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	g.Expect(fs.Parse([]string{"--backup-fs-roots=/var/backups,/srv/b"})).To(Succeed())
	g.Expect(o.Backup.FSRoots).To(Equal([]string{"/var/backups", "/srv/b"}))
}

// TestLeaderElectionTimingFlags: the chart's operator.leaderElection
// timings reach the manager; inconsistent ones are refused at start.
func TestLeaderElectionTimingFlags(t *testing.T) {
	g := NewWithT(t)
	o := DefaultOptions()
	g.Expect([]time.Duration{o.LeaseDuration, o.RenewDeadline, o.RetryPeriod}).To(Equal([]time.Duration{15 * time.Second, 10 * time.Second, 2 * time.Second}), "controller-runtime's defaults")
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	g.Expect(fs.Parse([]string{"--leader-election-lease-duration=30s", "--leader-election-renew-deadline=20s", "--leader-election-retry-period=4s"})).To(Succeed())
	g.Expect([]time.Duration{o.LeaseDuration, o.RenewDeadline, o.RetryPeriod}).To(Equal([]time.Duration{30 * time.Second, 20 * time.Second, 4 * time.Second}))

	o.MetricsAddr, o.HealthAddr = "0", "0"
	o.SkipControllerNameValidation = true
	o.RenewDeadline = o.LeaseDuration
	_, err := New(&rest.Config{Host: "http://127.0.0.1:1"}, o, nil)
	g.Expect(err).To(MatchError(ContainSubstring("--leader-election-lease-duration (30s) must be longer than --leader-election-renew-deadline (30s)")))
}

// TestNewBackupRunner builds the manager (nothing is called on the API
// server before it starts) with each --backup-runner setting.
func TestNewBackupRunner(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "vmbackup")
	NewWithT(t).Expect(os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
	local := backup.LocalModeOptions{StateDir: "/s/runner", StorageRoot: "/s/vmstorage", VMBackupBinary: bin}
	cases := []struct {
		name     string
		runner   string
		restore  string
		local    backup.LocalModeOptions
		errMatch string
	}{
		{name: "job", runner: BackupRunnerJob},
		{name: "local", runner: BackupRunnerLocal, local: local},
		{name: "local without a state directory", runner: BackupRunnerLocal, local: backup.LocalModeOptions{StorageRoot: "/s/vmstorage", VMBackupBinary: bin}, errMatch: "absolute state directory"},
		{name: "unknown", runner: "pod", errMatch: `--backup-runner: "pod" is neither "job" nor "local"`},
		{name: "local backups, restores as Jobs (the local stack)", runner: BackupRunnerLocal, restore: RestoreRunnerJob, local: local},
		{name: "local restores need the local options", runner: BackupRunnerJob, restore: RestoreRunnerLocal, errMatch: "local restore mode"},
		{name: "unknown restore runner", runner: BackupRunnerJob, restore: "pod", errMatch: `--restore-runner: "pod" is neither "job" nor "local"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			o := DefaultOptions()
			o.MetricsAddr, o.HealthAddr, o.LeaderElection = "0", "0", false
			o.SkipControllerNameValidation = true
			o.BackupRunner, o.BackupLocal, o.RestoreRunner = tc.runner, tc.local, tc.restore
			o.VMRestoreBinary = bin // any executable: nothing runs it here
			mgr, err := New(&rest.Config{Host: "http://127.0.0.1:1"}, o, nil)
			if tc.errMatch != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.errMatch)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(mgr).NotTo(BeNil())
		})
	}
}

// TestPprofOnLoopbackOnly: profiles are served without authentication, so
// --pprof-bind-address is off by default and refused off loopback.
func TestPprofOnLoopbackOnly(t *testing.T) {
	g := NewWithT(t)
	o := DefaultOptions()
	g.Expect(o.PprofAddr).To(BeEmpty(), "profiling is off by default")
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	g.Expect(fs.Parse([]string{"--pprof-bind-address=:6060"})).To(Succeed())
	o.MetricsAddr, o.HealthAddr = "0", "0"
	o.SkipControllerNameValidation = true
	_, err := New(&rest.Config{Host: "http://127.0.0.1:1"}, o, nil)
	g.Expect(err).To(MatchError(ContainSubstring(`--pprof-bind-address must be a loopback host:port (127.0.0.0/8, [::1] or localhost), not ":6060"`)))
}
