// Command ops-operator runs the ops-server operator. It reconciles every
// ops-server custom resource: ClusterUpgradeOperations, ClusterBackups,
// ClusterBackupSchedules, ClusterRestores, VMClusterOperations and
// ObservabilityStacks. main only parses the flags and starts the manager
// that operator/internal/manager builds.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tidbcloud/ops-server/operator/internal/manager"
	"github.com/tidbcloud/ops-server/operator/pkg/buildinfo"
)

func main() {
	opts := manager.DefaultOptions()
	zapOpts := zap.Options{}
	fs := pflag.NewFlagSet("ops-operator", pflag.ExitOnError)
	opts.BindFlags(fs)
	version := fs.Bool("version", false, "Print the version, VCS revision and Go version, then exit.")
	goFlags := flagSetFor(&zapOpts)
	fs.AddGoFlagSet(goFlags)
	_ = fs.Parse(os.Args[1:])
	if *version {
		fmt.Println("ops-operator", buildinfo.Get())
		return
	}

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	mgr, err := manager.New(ctrl.GetConfigOrDie(), opts, nil)
	if err != nil {
		log.Error(err, "Unable to build the manager")
		os.Exit(1)
	}
	log.Info("Starting ops-operator")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "Manager stopped with an error")
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "ops-operator stopped")
}
