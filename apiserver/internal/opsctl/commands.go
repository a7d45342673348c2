package opsctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/apiserver/pkg/client"
)

const jsonType = "application/json"

// Tables of the resources.
var (
	vmclusterTable = []column{
		trimCol("name", "name", "vmclusters/"), col("status", "status"),
		col("chart version", "helm_release_info.deployed_version"), ageCol("create_time"),
	}
	upgradeTable = []column{
		col("name", "name"), col("cluster", "spec.k8sClusterName"), col("target", "spec.targetVersion"),
		col("phase", "phase"), col("current step", "currentStep"), ageCol("createTime"),
	}
	backupTable = []column{
		col("name", "name"), col("vmcluster", "vmcluster"), col("phase", "phase"),
		col("progress", "progress"), ageCol("create_time"),
	}
	scheduleTable = []column{
		col("name", "name"), col("vmcluster", "vmcluster"), col("schedule", "schedule"),
		col("state", "state"), col("last successful", "last_successful_time"), ageCol("create_time"),
	}
	restoreTable = []column{
		col("name", "name"), col("backup", "backup"), col("phase", "phase"),
		col("progress", "progress"), ageCol("create_time"),
	}
	operationTable = []column{
		col("name", "name"), col("type", "type"), col("phase", "phase"),
		col("progress", "progress"), col("waiting for", "waiting_for"), ageCol("create_time"),
	}
	componentTable = []column{
		col("name", "name"), col("chart", "chart"), col("version", "version"),
		col("status", "status"), ageCol("create_time"),
	}
)

// readBody reads a request body from a file (- for standard input), in
// JSON or YAML, and returns it as JSON.
func (g *globals) readBody(path string) ([]byte, error) {
	if path == "" {
		return nil, &usageError{fmt.Errorf("-f is required: the request body, JSON or YAML (- for standard input)")}
	}
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(io.LimitReader(g.io.In, maxBody))
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s is neither JSON nor YAML: %w", path, err)
	}
	return j, nil
}

func ctxOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// vmclusterFlag adds the required --vmcluster flag of vmcluster-scoped
// resources.
func vmclusterFlag(cmd *cobra.Command, v *string) {
	cmd.PersistentFlags().StringVarP(v, "vmcluster", "c", "", "the vmcluster (name or id)")
}

func needVMCluster(v string) error {
	if v == "" {
		return &usageError{fmt.Errorf("--vmcluster is required")}
	}
	return nil
}

func vmclustersCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "vmclusters", Aliases: []string{"vmcluster", "vmc"}, Short: "VictoriaMetrics clusters"}
	var status string
	list := &cobra.Command{Use: "list", Short: "List vmclusters", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		params := &client.VmclustersListParams{Status: client.Opt(client.Status(status))}
		return g.runPages(func(c *client.Client, token string) (*http.Response, error) {
			params.PageToken = client.Opt(token)
			return c.VmclustersList(ctxOf(cmd), params)
		}, table{items: "vmclusters", columns: vmclusterTable}, "vmclusters")
	}}
	list.Flags().StringVar(&status, "status", "", "only vmclusters with this status (CREATING, RUNNING, UPDATING, FAILED, DELETING)")
	get := &cobra.Command{Use: "get NAME", Short: "Show a vmcluster", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return g.run(func(c *client.Client) (*http.Response, error) { return c.VmclustersGet(ctxOf(cmd), args[0]) }, table{columns: vmclusterTable})
	}}
	var file, ifMatch string
	var wait bool
	var timeout time.Duration
	create := &cobra.Command{Use: "create -f FILE", Short: "Create a vmcluster (the request body: name, values, ...)", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		body, err := g.readBody(file)
		if err != nil {
			return err
		}
		if !wait {
			return g.run(func(c *client.Client) (*http.Response, error) {
				return c.VmclustersCreateWithBody(ctxOf(cmd), jsonType, bytes.NewReader(body))
			}, table{columns: vmclusterTable})
		}
		_, created, err := g.do(func(c *client.Client) (*http.Response, error) {
			return c.VmclustersCreateWithBody(ctxOf(cmd), jsonType, bytes.NewReader(body))
		})
		if err != nil {
			return err
		}
		var vmc struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(created, &vmc); err != nil {
			return fmt.Errorf("the created vmcluster: %w", err)
		}
		return g.waitVMCluster(cmd, strings.TrimPrefix(vmc.Name, "vmclusters/"), string(client.RUNNING), timeout)
	}}
	create.Flags().StringVarP(&file, "filename", "f", "", "the request body, JSON or YAML (- for standard input)")
	create.Flags().BoolVar(&wait, "wait", false, "wait until the vmcluster is RUNNING (fails when it is FAILED)")
	create.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait waits")
	update := &cobra.Command{Use: "update NAME -f FILE", Short: "Change a vmcluster (PUT: values, chart version, ...)", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		body, err := g.readBody(file)
		if err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.VmclustersUpdateWithBody(ctxOf(cmd), args[0], &client.VmclustersUpdateParams{IfMatch: client.Opt(client.IfMatch(ifMatch))}, jsonType, bytes.NewReader(body))
		}, table{columns: vmclusterTable})
	}}
	update.Flags().StringVarP(&file, "filename", "f", "", "the request body, JSON or YAML (- for standard input)")
	update.Flags().StringVar(&ifMatch, "if-match", "", "the etag the vmcluster must still have")
	del := &cobra.Command{Use: "delete NAME", Short: "Delete a vmcluster", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.VmclustersDelete(ctxOf(cmd), args[0], &client.VmclustersDeleteParams{IfMatch: client.Opt(client.IfMatch(ifMatch))})
		}, table{columns: vmclusterTable})
	}}
	del.Flags().StringVar(&ifMatch, "if-match", "", "the etag the vmcluster must still have")
	var waitFor string
	waitCmd := &cobra.Command{Use: "wait NAME", Short: "Wait until a vmcluster has a status (default RUNNING)", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return g.waitVMCluster(cmd, args[0], waitFor, timeout)
	}}
	waitCmd.Flags().StringVar(&waitFor, "for", string(client.RUNNING), "the status to wait for")
	waitCmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait")
	cmd.AddCommand(list, get, create, update, del, waitCmd)
	return cmd
}

// waitVMCluster polls a vmcluster until it has status want, showing
// progress; FAILED (when not wanted) ends the wait with its message.
func (g *globals) waitVMCluster(cmd *cobra.Command, name, want string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctxOf(cmd), timeout)
	defer cancel()
	p := newProgress(g.io, fmt.Sprintf("vmcluster %s: waiting for %s", name, want))
	defer p.done()
	for {
		resp, body, err := g.do(func(c *client.Client) (*http.Response, error) { return c.VmclustersGet(ctx, name) })
		if err != nil && resp == nil && ctx.Err() != nil {
			return fmt.Errorf("vmcluster %s: not %s after %s", name, want, timeout)
		}
		if err != nil {
			return err
		}
		var vmc client.VMCluster
		if err := json.Unmarshal(body, &vmc); err != nil {
			return fmt.Errorf("vmcluster %s: %w", name, err)
		}
		status := string(vmc.Status)
		p.update(fmt.Sprintf("vmcluster %s: %s", name, status))
		if status == want {
			p.done()
			format, err := g.format()
			if err != nil {
				return err
			}
			return g.print(resp, body, format, table{columns: vmclusterTable})
		}
		if status == string(client.FAILED) {
			return &ExitError{Code: 1, Err: fmt.Errorf("vmcluster %s is FAILED: %s: %s", name, vmc.StatusReason, vmc.StatusMessage)}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("vmcluster %s: %s, not %s after %s", name, status, want, timeout)
		case <-time.After(g.io.PollInterval):
		}
	}
}

// runPages prints every page of a list (page tokens followed), merging the
// items under key for json and yaml output.
func (g *globals) runPages(page func(c *client.Client, token string) (*http.Response, error), t table, key string) error {
	format, err := g.format()
	if err != nil {
		return err
	}
	token := ""
	var merged map[string]any
	var lastResp *http.Response
	var first []byte
	for i := 0; ; i++ {
		resp, body, err := g.do(func(c *client.Client) (*http.Response, error) { return page(c, token) })
		if err != nil {
			return err
		}
		lastResp = resp
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			return fmt.Errorf("the list response: %w", err)
		}
		next, _ := doc["next_page_token"].(string)
		if next == "" {
			next, _ = doc["nextPageToken"].(string)
		}
		if i == 0 {
			first = body
			merged = doc
		} else {
			items, _ := merged[key].([]any)
			more, _ := doc[key].([]any)
			merged[key] = append(items, more...)
		}
		if next == "" || next == token {
			break
		}
		token = next
	}
	body := first
	if len(merged) > 0 && body != nil && token != "" {
		delete(merged, "next_page_token")
		delete(merged, "nextPageToken")
		if body, err = json.Marshal(merged); err != nil {
			return err
		}
	}
	return g.print(lastResp, body, format, t)
}

func upgradesCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "upgrades", Aliases: []string{"upgrade", "upgradeoperations"}, Short: "Kubernetes version upgrades of a cluster (ClusterUpgradeOperations)"}
	var file, key string
	var watch bool
	var timeout time.Duration
	create := &cobra.Command{Use: "create -f FILE", Short: "Start an upgrade (the request body of POST /upgradeOperations)", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		body, err := g.readBody(file)
		if err != nil {
			return err
		}
		req := func(c *client.Client) (*http.Response, error) {
			return c.UpgradeOperationsCreateWithBody(ctxOf(cmd), &client.UpgradeOperationsCreateParams{IdempotencyKey: client.Opt(client.IdempotencyKey(key))}, jsonType, bytes.NewReader(body))
		}
		if !watch {
			return g.run(req, table{columns: upgradeTable})
		}
		_, created, err := g.do(req)
		if err != nil {
			return err
		}
		var op client.UpgradeOperation
		if err := json.Unmarshal(created, &op); err != nil {
			return fmt.Errorf("the created operation: %w", err)
		}
		fmt.Fprintf(g.io.Out, "upgrade operation %s created (id %s)\n", op.Name, op.Id)
		return g.watchUpgrade(cmd, op.Id, timeout)
	}}
	create.Flags().StringVarP(&file, "filename", "f", "", "the request body, JSON or YAML (- for standard input)")
	create.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key: a retried create with the same key returns the first operation")
	create.Flags().BoolVar(&watch, "watch", false, "watch the operation until it ends (as `upgrades watch`)")
	create.Flags().DurationVar(&timeout, "timeout", 0, "how long --watch watches (0: no limit)")
	dryRun := &cobra.Command{Use: "dry-run -f FILE", Short: "Validate an upgrade request and show the ClusterUpgradeOperation it would create", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		body, err := g.readBody(file)
		if err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.UpgradeOperationsDryRunWithBody(ctxOf(cmd), &client.UpgradeOperationsDryRunParams{}, jsonType, bytes.NewReader(body))
		}, table{columns: []column{col("kind", "kind"), col("name", "metadata.name"), col("namespace", "metadata.namespace"), col("cluster", "spec.k8sClusterName"), col("target", "spec.targetVersion")}})
	}}
	dryRun.Flags().StringVarP(&file, "filename", "f", "", "the request body, JSON or YAML (- for standard input)")
	preflight := &cobra.Command{Use: "preflight -f FILE", Short: "Run the preflight checks of an upgrade request", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		body, err := g.readBody(file)
		if err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.UpgradeOperationsPreflightWithBody(ctxOf(cmd), jsonType, bytes.NewReader(body))
		}, table{items: "checks", columns: []column{col("check", "name"), col("result", "result"), col("hint", "hint")}})
	}}
	preflight.Flags().StringVarP(&file, "filename", "f", "", "the request body, JSON or YAML (- for standard input)")
	var cluster, status string
	list := &cobra.Command{Use: "list", Short: "List upgrade operations", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		params := &client.UpgradeOperationsListParams{K8sClusterName: client.Opt(cluster), Status: client.Opt(client.UpgradeOperationsListParamsStatus(status))}
		return g.runPages(func(c *client.Client, token string) (*http.Response, error) {
			params.PageToken = client.Opt(token)
			return c.UpgradeOperationsList(ctxOf(cmd), params)
		}, table{items: "upgradeOperations", columns: upgradeTable}, "upgradeOperations")
	}}
	list.Flags().StringVar(&cluster, "k8s-cluster", "", "only operations of this cluster (k8sClusterName)")
	list.Flags().StringVar(&status, "status", "", "only operations in this phase")
	byID := func(use, short string, req func(ctx context.Context, c *client.Client, id string) (*http.Response, error)) *cobra.Command {
		return &cobra.Command{Use: use + " ID", Short: short, Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
			return g.run(func(c *client.Client) (*http.Response, error) { return req(ctxOf(cmd), c, args[0]) }, table{columns: upgradeTable})
		}}
	}
	get := byID("get", "Show an upgrade operation", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
		return c.UpgradeOperationsGet(ctx, client.UpgradeOperationID(id))
	})
	pause := byID("pause", "Pause an upgrade operation (the step in flight finishes)", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
		return c.UpgradeOperationsPause(ctx, client.UpgradeOperationID(id))
	})
	resume := byID("resume", "Resume a paused upgrade operation", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
		return c.UpgradeOperationsResume(ctx, client.UpgradeOperationID(id))
	})
	cancelCmd := &cobra.Command{Use: "cancel ID", Aliases: []string{"delete"}, Short: "Cancel a running upgrade operation, or delete a finished one", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.UpgradeOperationsDelete(ctxOf(cmd), client.UpgradeOperationID(args[0]))
		}, table{})
	}}
	var gate string
	approve := &cobra.Command{Use: "approve ID", Short: "Approve the gate an upgrade operation waits at", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		body, err := json.Marshal(client.ApproveRequest{Gate: gate})
		if err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.UpgradeOperationsApproveWithBody(ctxOf(cmd), client.UpgradeOperationID(args[0]), jsonType, bytes.NewReader(body))
		}, table{columns: upgradeTable})
	}}
	approve.Flags().StringVar(&gate, "gate", "", "the gate id (default: the gate the operation waits at)")
	events := &cobra.Command{Use: "events ID", Short: "The Events of an upgrade operation", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.UpgradeOperationsEvents(ctxOf(cmd), client.UpgradeOperationID(args[0]), &client.UpgradeOperationsEventsParams{})
		}, table{items: "events", columns: eventTable})
	}}
	watchCmd := &cobra.Command{Use: "watch ID", Short: "Follow an upgrade operation's steps until it ends: exit 0 when it Succeeded, 1 when it Failed or was Cancelled", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return g.watchUpgrade(cmd, args[0], timeout)
	}}
	watchCmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: no limit)")
	cmd.AddCommand(create, dryRun, preflight, list, get, pause, resume, cancelCmd, approve, events, watchCmd)
	return cmd
}

var eventTable = []column{
	col("last seen", "time"), col("type", "type"), col("reason", "reason"),
	col("object", "object.name"), col("message", "message"),
}

func backupsCommand(g *globals) *cobra.Command {
	var vmc, file, key string
	cmd := &cobra.Command{Use: "backups", Aliases: []string{"backup"}, Short: "Backups of a vmcluster's vmstorage (ClusterBackups)"}
	vmclusterFlag(cmd, &vmc)
	list := &cobra.Command{Use: "list", Short: "List a vmcluster's backups", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		params := &client.BackupsListParams{}
		return g.runPages(func(c *client.Client, token string) (*http.Response, error) {
			params.PageToken = client.Opt(token)
			return c.BackupsList(ctxOf(cmd), client.VMClusterID(vmc), params)
		}, table{items: "backups", columns: backupTable}, "backups")
	}}
	get := &cobra.Command{Use: "get BACKUP", Short: "Show a backup", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.BackupsGet(ctxOf(cmd), client.VMClusterID(vmc), client.BackupID(args[0]))
		}, table{columns: backupTable})
	}}
	create := &cobra.Command{Use: "create -f FILE", Short: "Back up a vmcluster (the request body: destination, ...)", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		body, err := g.readBody(file)
		if err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.BackupsCreateWithBody(ctxOf(cmd), client.VMClusterID(vmc), &client.BackupsCreateParams{IdempotencyKey: client.Opt(client.IdempotencyKey(key))}, jsonType, bytes.NewReader(body))
		}, table{columns: backupTable})
	}}
	create.Flags().StringVarP(&file, "filename", "f", "", "the request body, JSON or YAML (- for standard input)")
	create.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key of the request")
	del := &cobra.Command{Use: "delete BACKUP", Short: "Delete a backup", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.BackupsDelete(ctxOf(cmd), client.VMClusterID(vmc), client.BackupID(args[0]))
		}, table{columns: backupTable})
	}}
	cmd.AddCommand(list, get, create, del)
	return cmd
}

func schedulesCommand(g *globals) *cobra.Command {
	var vmc, file, key string
	cmd := &cobra.Command{Use: "schedules", Aliases: []string{"schedule", "backupschedules"}, Short: "Backup schedules of a vmcluster"}
	vmclusterFlag(cmd, &vmc)
	list := &cobra.Command{Use: "list", Short: "List a vmcluster's backup schedules", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		params := &client.BackupSchedulesListParams{}
		return g.runPages(func(c *client.Client, token string) (*http.Response, error) {
			params.PageToken = client.Opt(token)
			return c.BackupSchedulesList(ctxOf(cmd), client.VMClusterID(vmc), params)
		}, table{items: "backup_schedules", columns: scheduleTable}, "backup_schedules")
	}}
	get := &cobra.Command{Use: "get SCHEDULE", Short: "Show a backup schedule", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.BackupSchedulesGet(ctxOf(cmd), client.VMClusterID(vmc), client.ScheduleID(args[0]))
		}, table{columns: scheduleTable})
	}}
	create := &cobra.Command{Use: "create -f FILE", Short: "Create a backup schedule", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		body, err := g.readBody(file)
		if err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.BackupSchedulesCreateWithBody(ctxOf(cmd), client.VMClusterID(vmc), &client.BackupSchedulesCreateParams{IdempotencyKey: client.Opt(client.IdempotencyKey(key))}, jsonType, bytes.NewReader(body))
		}, table{columns: scheduleTable})
	}}
	create.Flags().StringVarP(&file, "filename", "f", "", "the request body, JSON or YAML (- for standard input)")
	create.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key of the request")
	update := &cobra.Command{Use: "update SCHEDULE -f FILE", Short: "Change a backup schedule", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		body, err := g.readBody(file)
		if err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.BackupSchedulesUpdateWithBody(ctxOf(cmd), client.VMClusterID(vmc), client.ScheduleID(args[0]), jsonType, bytes.NewReader(body))
		}, table{columns: scheduleTable})
	}}
	update.Flags().StringVarP(&file, "filename", "f", "", "the request body, JSON or YAML (- for standard input)")
	del := &cobra.Command{Use: "delete SCHEDULE", Short: "Delete a backup schedule", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.BackupSchedulesDelete(ctxOf(cmd), client.VMClusterID(vmc), client.ScheduleID(args[0]))
		}, table{columns: scheduleTable})
	}}
	cmd.AddCommand(list, get, create, update, del)
	return cmd
}

func restoresCommand(g *globals) *cobra.Command {
	var vmc, file, key string
	cmd := &cobra.Command{Use: "restores", Aliases: []string{"restore"}, Short: "Restores of a backup into a vmcluster"}
	vmclusterFlag(cmd, &vmc)
	list := &cobra.Command{Use: "list", Short: "List a vmcluster's restores", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		params := &client.RestoresListParams{}
		return g.runPages(func(c *client.Client, token string) (*http.Response, error) {
			params.PageToken = client.Opt(token)
			return c.RestoresList(ctxOf(cmd), client.VMClusterID(vmc), params)
		}, table{items: "restores", columns: restoreTable}, "restores")
	}}
	get := &cobra.Command{Use: "get RESTORE", Short: "Show a restore", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.RestoresGet(ctxOf(cmd), client.VMClusterID(vmc), client.RestoreID(args[0]))
		}, table{columns: restoreTable})
	}}
	create := &cobra.Command{Use: "create -f FILE", Short: "Restore a backup into the vmcluster", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		body, err := g.readBody(file)
		if err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.RestoresCreateWithBody(ctxOf(cmd), client.VMClusterID(vmc), &client.RestoresCreateParams{IdempotencyKey: client.Opt(client.IdempotencyKey(key))}, jsonType, bytes.NewReader(body))
		}, table{columns: restoreTable})
	}}
	create.Flags().StringVarP(&file, "filename", "f", "", "the request body, JSON or YAML (- for standard input)")
	create.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key of the request")
	cmd.AddCommand(list, get, create)
	return cmd
}

func operationsCommand(g *globals) *cobra.Command {
	var vmc, file, key string
	var dryRun bool
	cmd := &cobra.Command{Use: "operations", Aliases: []string{"operation", "vmclusterops"}, Short: "Day-2 operations of a vmcluster (scale, rolling restart, ...)"}
	vmclusterFlag(cmd, &vmc)
	list := &cobra.Command{Use: "list", Short: "List a vmcluster's operations", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		params := &client.VmclusterOperationsListParams{}
		return g.runPages(func(c *client.Client, token string) (*http.Response, error) {
			params.PageToken = client.Opt(token)
			return c.VmclusterOperationsList(ctxOf(cmd), client.VMClusterID(vmc), params)
		}, table{items: "operations", columns: operationTable}, "operations")
	}}
	create := &cobra.Command{Use: "create -f FILE", Short: "Start an operation (the request body: type, ...)", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		if err := needVMCluster(vmc); err != nil {
			return err
		}
		body, err := g.readBody(file)
		if err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.VmclusterOperationsCreateWithBody(ctxOf(cmd), client.VMClusterID(vmc), &client.VmclusterOperationsCreateParams{DryRun: client.Opt(dryRun), IdempotencyKey: client.Opt(client.IdempotencyKey(key))}, jsonType, bytes.NewReader(body))
		}, table{columns: operationTable})
	}}
	create.Flags().StringVarP(&file, "filename", "f", "", "the request body, JSON or YAML (- for standard input)")
	create.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key of the request")
	create.Flags().BoolVar(&dryRun, "dry-run", false, "validate and show the planned steps only")
	byID := func(use, short string, req func(ctx context.Context, c *client.Client, vmc client.VMClusterID, id client.OperationID) (*http.Response, error)) *cobra.Command {
		return &cobra.Command{Use: use + " OPERATION", Short: short, Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
			if err := needVMCluster(vmc); err != nil {
				return err
			}
			return g.run(func(c *client.Client) (*http.Response, error) {
				return req(ctxOf(cmd), c, client.VMClusterID(vmc), client.OperationID(args[0]))
			}, table{columns: operationTable})
		}}
	}
	cmd.AddCommand(list, create,
		byID("get", "Show an operation", func(ctx context.Context, c *client.Client, v client.VMClusterID, id client.OperationID) (*http.Response, error) {
			return c.VmclusterOperationsGet(ctx, v, id)
		}),
		byID("cancel", "Cancel an operation", func(ctx context.Context, c *client.Client, v client.VMClusterID, id client.OperationID) (*http.Response, error) {
			return c.VmclusterOperationsCancel(ctx, v, id)
		}),
		byID("pause", "Pause an operation", func(ctx context.Context, c *client.Client, v client.VMClusterID, id client.OperationID) (*http.Response, error) {
			return c.VmclusterOperationsPause(ctx, v, id)
		}),
		byID("resume", "Resume a paused operation", func(ctx context.Context, c *client.Client, v client.VMClusterID, id client.OperationID) (*http.Response, error) {
			return c.VmclusterOperationsResume(ctx, v, id)
		}),
	)
	return cmd
}

func componentsCommand(g *globals) *cobra.Command {
	var file, ifMatch, key string
	cmd := &cobra.Command{Use: "components", Aliases: []string{"component"}, Short: "Catalog charts installed as components"}
	list := &cobra.Command{Use: "list", Short: "List components", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		params := &client.ComponentsListParams{}
		return g.runPages(func(c *client.Client, token string) (*http.Response, error) {
			params.PageToken = client.Opt(token)
			return c.ComponentsList(ctxOf(cmd), params)
		}, table{items: "components", columns: componentTable}, "components")
	}}
	get := &cobra.Command{Use: "get NAME", Short: "Show a component", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return g.run(func(c *client.Client) (*http.Response, error) { return c.ComponentsGet(ctxOf(cmd), args[0]) }, table{columns: componentTable})
	}}
	create := &cobra.Command{Use: "create -f FILE", Short: "Install a component", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		body, err := g.readBody(file)
		if err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.ComponentsCreateWithBody(ctxOf(cmd), &client.ComponentsCreateParams{IdempotencyKey: client.Opt(client.IdempotencyKey(key))}, jsonType, bytes.NewReader(body))
		}, table{columns: componentTable})
	}}
	create.Flags().StringVarP(&file, "filename", "f", "", "the request body, JSON or YAML (- for standard input)")
	create.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key of the request")
	update := &cobra.Command{Use: "update NAME -f FILE", Short: "Change a component", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		body, err := g.readBody(file)
		if err != nil {
			return err
		}
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.ComponentsUpdateWithBody(ctxOf(cmd), args[0], &client.ComponentsUpdateParams{IfMatch: client.Opt(client.IfMatch(ifMatch))}, jsonType, bytes.NewReader(body))
		}, table{columns: componentTable})
	}}
	update.Flags().StringVarP(&file, "filename", "f", "", "the request body, JSON or YAML (- for standard input)")
	update.Flags().StringVar(&ifMatch, "if-match", "", "the etag the component must still have")
	del := &cobra.Command{Use: "delete NAME", Short: "Uninstall a component", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.ComponentsDelete(ctxOf(cmd), args[0], &client.ComponentsDeleteParams{IfMatch: client.Opt(client.IfMatch(ifMatch))})
		}, table{columns: componentTable})
	}}
	del.Flags().StringVar(&ifMatch, "if-match", "", "the etag the component must still have")
	cmd.AddCommand(list, get, create, update, del)
	return cmd
}

// troubleshootCommands are the read-only views of a vmcluster:
// resources, pods, events, diagnostics, logs.
func troubleshootCommands(g *globals) []*cobra.Command {
	view := func(use, short string, t table, req func(ctx context.Context, c *client.Client, vmc client.VMClusterID) (*http.Response, error)) *cobra.Command {
		return &cobra.Command{Use: use + " VMCLUSTER", Short: short, Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
			return g.run(func(c *client.Client) (*http.Response, error) { return req(ctxOf(cmd), c, client.VMClusterID(args[0])) }, t)
		}}
	}
	resources := view("resources", "A vmcluster's resource tree", table{}, func(ctx context.Context, c *client.Client, v client.VMClusterID) (*http.Response, error) {
		return c.VmclustersResources(ctx, v)
	})
	pods := view("pods", "A vmcluster's Pods", table{items: "pods", columns: []column{
		col("name", "name"), col("component", "component"), col("ready", "ready"), col("phase", "phase"),
		col("health", "health"), col("restarts", "restarts"), col("node", "node"), ageCol("createTime"),
	}}, func(ctx context.Context, c *client.Client, v client.VMClusterID) (*http.Response, error) {
		return c.VmclustersPodsList(ctx, v, &client.VmclustersPodsListParams{})
	})
	events := view("events", "A vmcluster's Events", table{items: "events", columns: eventTable}, func(ctx context.Context, c *client.Client, v client.VMClusterID) (*http.Response, error) {
		return c.VmclustersEvents(ctx, v, &client.VmclustersEventsParams{})
	})
	diagnostics := view("diagnostics", "A vmcluster's diagnostics bundle", table{}, func(ctx context.Context, c *client.Client, v client.VMClusterID) (*http.Response, error) {
		return c.VmclustersDiagnostics(ctx, v)
	})
	var container string
	var tail int
	logs := &cobra.Command{Use: "logs VMCLUSTER POD", Short: "A Pod's log", Args: cobra.ExactArgs(2), RunE: func(cmd *cobra.Command, args []string) error {
		_, body, err := g.do(func(c *client.Client) (*http.Response, error) {
			return c.VmclustersPodsLogs(ctxOf(cmd), client.VMClusterID(args[0]), client.PodName(args[1]), &client.VmclustersPodsLogsParams{Container: client.Opt(container), TailLines: client.Opt(tail)})
		})
		if err != nil {
			return err
		}
		_, err = g.io.Out.Write(body)
		return err
	}}
	logs.Flags().StringVar(&container, "container", "", "the container (default: the Pod's main one)")
	logs.Flags().IntVar(&tail, "tail", 0, "only the last lines")
	return []*cobra.Command{resources, pods, events, diagnostics, logs}
}

// cloudFlags are the flags naming a cluster in a cloud.
type cloudFlags struct{ cluster, region, provider string }

func (f *cloudFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.cluster, "k8s-cluster", "", "the cluster's name in the cloud (k8sClusterName)")
	cmd.Flags().StringVar(&f.region, "region", "", "the cloud region")
	cmd.Flags().StringVar(&f.provider, "cloud-provider", "", "eks, gke, aks, ack or mock")
	for _, n := range []string{"k8s-cluster", "region", "cloud-provider"} {
		_ = cmd.MarkFlagRequired(n)
	}
}

func nodeGroupsCommand(g *globals) *cobra.Command {
	var f cloudFlags
	run := func(cmd *cobra.Command, _ []string) error {
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.NodeGroupsList(ctxOf(cmd), &client.NodeGroupsListParams{
				K8sClusterName: client.K8sClusterName(f.cluster), Region: client.Region(f.region), CloudProvider: client.NodeGroupsListParamsCloudProvider(f.provider),
			})
		}, table{items: "nodeGroups", columns: []column{
			col("name", "name"), col("version", "version"), col("status", "status"), col("desired", "desiredSize"),
			col("min", "minSize"), col("max", "maxSize"), col("instance types", "instanceTypes"),
		}})
	}
	cmd := &cobra.Command{Use: "nodegroups", Aliases: []string{"nodegroup"}, Short: "A cluster's node groups, from the cloud", Args: cobra.NoArgs, RunE: run}
	list := &cobra.Command{Use: "list", Short: "List a cluster's node groups", Args: cobra.NoArgs, RunE: run}
	f.add(cmd)
	f.add(list)
	cmd.AddCommand(list)
	return cmd
}

func addonsCommand(g *globals) *cobra.Command {
	var f cloudFlags
	run := func(cmd *cobra.Command, _ []string) error {
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.AddonsList(ctxOf(cmd), &client.AddonsListParams{
				K8sClusterName: client.K8sClusterName(f.cluster), Region: client.Region(f.region), CloudProvider: client.AddonsListParamsCloudProvider(f.provider),
			})
		}, table{items: "addons", columns: []column{
			col("name", "name"), col("version", "version"), col("status", "status"), col("available", "availableVersions"),
		}})
	}
	cmd := &cobra.Command{Use: "addons", Aliases: []string{"addon"}, Short: "A cluster's addons and the versions they can move to, from the cloud", Args: cobra.NoArgs, RunE: run}
	list := &cobra.Command{Use: "list", Short: "List a cluster's addons", Args: cobra.NoArgs, RunE: run}
	f.add(cmd)
	f.add(list)
	cmd.AddCommand(list)
	return cmd
}

func providersCommand(g *globals) *cobra.Command {
	run := func(cmd *cobra.Command, _ []string) error {
		return g.run(func(c *client.Client) (*http.Response, error) { return c.ProvidersList(ctxOf(cmd)) }, table{items: "providers", columns: []column{
			col("name", "name"), col("in-place", "inPlace"), col("blue-green", "blueGreen"), col("addons", "addons"),
			col("version format", "versionFormat"),
		}})
	}
	cmd := &cobra.Command{Use: "providers", Short: "The cloud providers and what each supports", Args: cobra.NoArgs, RunE: run}
	cmd.AddCommand(&cobra.Command{Use: "list", Short: "List the cloud providers", Args: cobra.NoArgs, RunE: run})
	return cmd
}

func bootstrapCommand(g *globals) *cobra.Command {
	return &cobra.Command{Use: "bootstrap", Short: "Status of the declared observability stack (ObservabilityStacks)", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		return g.run(func(c *client.Client) (*http.Response, error) { return c.BootstrapGet(ctxOf(cmd)) }, table{items: "stacks", columns: []column{
			col("name", "name"), col("ready", "ready"), col("message", "message"),
		}})
	}}
}

func versionCommand(g *globals) *cobra.Command {
	return &cobra.Command{Use: "version", Short: "opsctl's version and ops-apiserver's", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		format, err := g.format()
		if err != nil {
			return err
		}
		if format == "table" {
			fmt.Fprintf(g.io.Out, "opsctl %s\n", cmd.Root().Version)
		}
		return g.run(func(c *client.Client) (*http.Response, error) { return c.Version(ctxOf(cmd)) }, table{columns: []column{
			col("server version", "version"), col("revision", "revision"), col("go", "goVersion"),
		}})
	}}
}
