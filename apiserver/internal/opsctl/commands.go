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

// fileFlag adds -f/--filename, the file of the request body.
func fileFlag(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVarP(v, "filename", "f", "", "the request body, JSON or YAML (- for standard input)")
}

// ifMatchFlag adds --if-match, the etag the kind of resource must still
// have, to each of cmds.
func ifMatchFlag(v *string, kind string, cmds ...*cobra.Command) {
	for _, cmd := range cmds {
		cmd.Flags().StringVar(v, "if-match", "", "the etag the "+kind+" must still have")
	}
}

// resource builds the subcommands of one kind of resource: each sends one
// request and prints the response, as a table of columns for -o table.
type resource struct {
	g *globals
	// vmc is the --vmcluster of a vmcluster-scoped kind, required by each
	// subcommand; nil: the kind is not scoped.
	vmc     *string
	columns []column
}

// scoped adds the required --vmcluster flag to cmd, the command of a
// vmcluster-scoped kind, and returns the builders of its subcommands and
// the flag's value.
func scoped(g *globals, cmd *cobra.Command, columns []column) (resource, *string) {
	vmc := new(string)
	cmd.PersistentFlags().StringVarP(vmc, "vmcluster", "c", "", "the vmcluster (name or id)")
	return resource{g: g, vmc: vmc, columns: columns}, vmc
}

// check is the usage error of a scoped kind's subcommand without --vmcluster.
func (r resource) check() error {
	if r.vmc != nil && *r.vmc == "" {
		return &usageError{fmt.Errorf("--vmcluster is required")}
	}
	return nil
}

// list is `list`: every page of the items (the key of the list response),
// page the request of one.
func (r resource) list(short, items string, page func(ctx context.Context, c *client.Client, token string) (*http.Response, error)) *cobra.Command {
	return &cobra.Command{Use: "list", Short: short, Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		if err := r.check(); err != nil {
			return err
		}
		return r.g.runPages(func(c *client.Client, token string) (*http.Response, error) {
			return page(ctxOf(cmd), c, token)
		}, table{items: items, columns: r.columns}, items)
	}}
}

// byID is a command of one argument, the resource's name or id (use is
// e.g. "get NAME"): get, delete, pause, ...
func (r resource) byID(use, short string, req func(ctx context.Context, c *client.Client, id string) (*http.Response, error)) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		if err := r.check(); err != nil {
			return err
		}
		return r.g.run(func(c *client.Client) (*http.Response, error) { return req(ctxOf(cmd), c, args[0]) }, table{columns: r.columns})
	}}
}

// withBody is a command sending the request body of -f FILE, printed
// with t.
func (r resource) withBody(use, short string, args cobra.PositionalArgs, t table, req func(ctx context.Context, c *client.Client, args []string, body io.Reader) (*http.Response, error)) *cobra.Command {
	var file string
	cmd := &cobra.Command{Use: use, Short: short, Args: args, RunE: func(cmd *cobra.Command, args []string) error {
		if err := r.check(); err != nil {
			return err
		}
		body, err := r.g.readBody(file)
		if err != nil {
			return err
		}
		return r.g.run(func(c *client.Client) (*http.Response, error) {
			return req(ctxOf(cmd), c, args, bytes.NewReader(body))
		}, t)
	}}
	fileFlag(cmd, &file)
	return cmd
}

// create is `create -f FILE` with --idempotency-key (key in req).
func (r resource) create(short string, req func(ctx context.Context, c *client.Client, key string, body io.Reader) (*http.Response, error)) *cobra.Command {
	var key string
	cmd := r.withBody("create -f FILE", short, cobra.NoArgs, table{columns: r.columns}, func(ctx context.Context, c *client.Client, _ []string, body io.Reader) (*http.Response, error) {
		return req(ctx, c, key, body)
	})
	cmd.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key of the request")
	return cmd
}

// update is a command of one argument, the resource's name or id (use is
// e.g. "update NAME -f FILE"), sending the request body of -f FILE.
func (r resource) update(use, short string, req func(ctx context.Context, c *client.Client, id string, body io.Reader) (*http.Response, error)) *cobra.Command {
	return r.withBody(use, short, cobra.ExactArgs(1), table{columns: r.columns}, func(ctx context.Context, c *client.Client, args []string, body io.Reader) (*http.Response, error) {
		return req(ctx, c, args[0], body)
	})
}

func vmclustersCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "vmclusters", Aliases: []string{"vmcluster", "vmc"}, Short: "VictoriaMetrics clusters"}
	r := resource{g: g, columns: vmclusterTable}
	var status, ifMatch string
	list := r.list("List vmclusters", "vmclusters", func(ctx context.Context, c *client.Client, token string) (*http.Response, error) {
		return c.VmclustersList(ctx, &client.VmclustersListParams{Status: client.Opt(client.Status(status)), PageToken: client.Opt(token)})
	})
	list.Flags().StringVar(&status, "status", "", "only vmclusters with this status (CREATING, RUNNING, UPDATING, FAILED, DELETING)")
	get := r.byID("get NAME", "Show a vmcluster", func(ctx context.Context, c *client.Client, name string) (*http.Response, error) {
		return c.VmclustersGet(ctx, name)
	})
	var file string
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
	fileFlag(create, &file)
	create.Flags().BoolVar(&wait, "wait", false, "wait until the vmcluster is RUNNING (fails when it is FAILED)")
	create.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait waits")
	update := r.update("update NAME -f FILE", "Change a vmcluster (PUT: values, chart version, ...)", func(ctx context.Context, c *client.Client, name string, body io.Reader) (*http.Response, error) {
		return c.VmclustersUpdateWithBody(ctx, name, &client.VmclustersUpdateParams{IfMatch: client.Opt(ifMatch)}, jsonType, body)
	})
	del := r.byID("delete NAME", "Delete a vmcluster", func(ctx context.Context, c *client.Client, name string) (*http.Response, error) {
		return c.VmclustersDelete(ctx, name, &client.VmclustersDeleteParams{IfMatch: client.Opt(ifMatch)})
	})
	ifMatchFlag(&ifMatch, "vmcluster", update, del)
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
	r := resource{g: g, columns: upgradeTable}
	var file, key string
	var watch bool
	var timeout time.Duration
	create := &cobra.Command{Use: "create -f FILE", Short: "Start an upgrade (the request body of POST /upgradeOperations)", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		body, err := g.readBody(file)
		if err != nil {
			return err
		}
		req := func(c *client.Client) (*http.Response, error) {
			return c.UpgradeOperationsCreateWithBody(ctxOf(cmd), &client.UpgradeOperationsCreateParams{IdempotencyKey: client.Opt(key)}, jsonType, bytes.NewReader(body))
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
	fileFlag(create, &file)
	create.Flags().StringVar(&key, "idempotency-key", "", "Idempotency-Key: a retried create with the same key returns the first operation")
	create.Flags().BoolVar(&watch, "watch", false, "watch the operation until it ends (as `upgrades watch`)")
	create.Flags().DurationVar(&timeout, "timeout", 0, "how long --watch watches (0: no limit)")
	dryRun := r.withBody("dry-run -f FILE", "Validate an upgrade request and show the ClusterUpgradeOperation it would create", cobra.NoArgs, table{columns: []column{
		col("kind", "kind"), col("name", "metadata.name"), col("namespace", "metadata.namespace"), col("cluster", "spec.k8sClusterName"), col("target", "spec.targetVersion"),
	}}, func(ctx context.Context, c *client.Client, _ []string, body io.Reader) (*http.Response, error) {
		return c.UpgradeOperationsDryRunWithBody(ctx, &client.UpgradeOperationsDryRunParams{}, jsonType, body)
	})
	preflight := r.withBody("preflight -f FILE", "Run the preflight checks of an upgrade request", cobra.NoArgs, table{items: "checks", columns: []column{
		col("check", "name"), col("result", "result"), col("hint", "hint"),
	}}, func(ctx context.Context, c *client.Client, _ []string, body io.Reader) (*http.Response, error) {
		return c.UpgradeOperationsPreflightWithBody(ctx, jsonType, body)
	})
	var cluster, status string
	list := r.list("List upgrade operations", "upgradeOperations", func(ctx context.Context, c *client.Client, token string) (*http.Response, error) {
		return c.UpgradeOperationsList(ctx, &client.UpgradeOperationsListParams{
			K8sClusterName: client.Opt(cluster), Status: client.Opt(client.UpgradeOperationsListParamsStatus(status)), PageToken: client.Opt(token),
		})
	})
	list.Flags().StringVar(&cluster, "k8s-cluster", "", "only operations of this cluster (k8sClusterName)")
	list.Flags().StringVar(&status, "status", "", "only operations in this phase")
	get := r.byID("get ID", "Show an upgrade operation", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
		return c.UpgradeOperationsGet(ctx, id)
	})
	pause := r.byID("pause ID", "Pause an upgrade operation (the step in flight finishes)", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
		return c.UpgradeOperationsPause(ctx, id)
	})
	resume := r.byID("resume ID", "Resume a paused upgrade operation", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
		return c.UpgradeOperationsResume(ctx, id)
	})
	cancelCmd := resource{g: g}.byID("cancel ID", "Cancel a running upgrade operation, or delete a finished one", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
		return c.UpgradeOperationsDelete(ctx, id)
	})
	cancelCmd.Aliases = []string{"delete"}
	var gate string
	approve := r.byID("approve ID", "Approve the gate an upgrade operation waits at", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
		body, err := json.Marshal(client.ApproveRequest{Gate: gate})
		if err != nil {
			return nil, err
		}
		return c.UpgradeOperationsApproveWithBody(ctx, id, jsonType, bytes.NewReader(body))
	})
	approve.Flags().StringVar(&gate, "gate", "", "the gate id (default: the gate the operation waits at)")
	events := &cobra.Command{Use: "events ID", Short: "The Events of an upgrade operation", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return g.run(func(c *client.Client) (*http.Response, error) {
			return c.UpgradeOperationsEvents(ctxOf(cmd), args[0], &client.UpgradeOperationsEventsParams{})
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
	cmd := &cobra.Command{Use: "backups", Aliases: []string{"backup"}, Short: "Backups of a vmcluster's vmstorage (ClusterBackups)"}
	r, vmc := scoped(g, cmd, backupTable)
	cmd.AddCommand(
		r.list("List a vmcluster's backups", "backups", func(ctx context.Context, c *client.Client, token string) (*http.Response, error) {
			return c.BackupsList(ctx, *vmc, &client.BackupsListParams{PageToken: client.Opt(token)})
		}),
		r.byID("get BACKUP", "Show a backup", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
			return c.BackupsGet(ctx, *vmc, id)
		}),
		r.create("Back up a vmcluster (the request body: destination, ...)", func(ctx context.Context, c *client.Client, key string, body io.Reader) (*http.Response, error) {
			return c.BackupsCreateWithBody(ctx, *vmc, &client.BackupsCreateParams{IdempotencyKey: client.Opt(key)}, jsonType, body)
		}),
		r.byID("delete BACKUP", "Delete a backup", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
			return c.BackupsDelete(ctx, *vmc, id)
		}),
	)
	return cmd
}

func schedulesCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "schedules", Aliases: []string{"schedule", "backupschedules"}, Short: "Backup schedules of a vmcluster"}
	r, vmc := scoped(g, cmd, scheduleTable)
	cmd.AddCommand(
		r.list("List a vmcluster's backup schedules", "backup_schedules", func(ctx context.Context, c *client.Client, token string) (*http.Response, error) {
			return c.BackupSchedulesList(ctx, *vmc, &client.BackupSchedulesListParams{PageToken: client.Opt(token)})
		}),
		r.byID("get SCHEDULE", "Show a backup schedule", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
			return c.BackupSchedulesGet(ctx, *vmc, id)
		}),
		r.create("Create a backup schedule", func(ctx context.Context, c *client.Client, key string, body io.Reader) (*http.Response, error) {
			return c.BackupSchedulesCreateWithBody(ctx, *vmc, &client.BackupSchedulesCreateParams{IdempotencyKey: client.Opt(key)}, jsonType, body)
		}),
		r.update("update SCHEDULE -f FILE", "Change a backup schedule", func(ctx context.Context, c *client.Client, id string, body io.Reader) (*http.Response, error) {
			return c.BackupSchedulesUpdateWithBody(ctx, *vmc, id, jsonType, body)
		}),
		r.byID("delete SCHEDULE", "Delete a backup schedule", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
			return c.BackupSchedulesDelete(ctx, *vmc, id)
		}),
	)
	return cmd
}

func restoresCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "restores", Aliases: []string{"restore"}, Short: "Restores of a backup into a vmcluster"}
	r, vmc := scoped(g, cmd, restoreTable)
	cmd.AddCommand(
		r.list("List a vmcluster's restores", "restores", func(ctx context.Context, c *client.Client, token string) (*http.Response, error) {
			return c.RestoresList(ctx, *vmc, &client.RestoresListParams{PageToken: client.Opt(token)})
		}),
		r.byID("get RESTORE", "Show a restore", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
			return c.RestoresGet(ctx, *vmc, id)
		}),
		r.create("Restore a backup into the vmcluster", func(ctx context.Context, c *client.Client, key string, body io.Reader) (*http.Response, error) {
			return c.RestoresCreateWithBody(ctx, *vmc, &client.RestoresCreateParams{IdempotencyKey: client.Opt(key)}, jsonType, body)
		}),
	)
	return cmd
}

func operationsCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "operations", Aliases: []string{"operation", "vmclusterops"}, Short: "Day-2 operations of a vmcluster (scale, rolling restart, ...)"}
	r, vmc := scoped(g, cmd, operationTable)
	var dryRun bool
	create := r.create("Start an operation (the request body: type, ...)", func(ctx context.Context, c *client.Client, key string, body io.Reader) (*http.Response, error) {
		return c.VmclusterOperationsCreateWithBody(ctx, *vmc, &client.VmclusterOperationsCreateParams{DryRun: client.Opt(dryRun), IdempotencyKey: client.Opt(key)}, jsonType, body)
	})
	create.Flags().BoolVar(&dryRun, "dry-run", false, "validate and show the planned steps only")
	cmd.AddCommand(
		r.list("List a vmcluster's operations", "operations", func(ctx context.Context, c *client.Client, token string) (*http.Response, error) {
			return c.VmclusterOperationsList(ctx, *vmc, &client.VmclusterOperationsListParams{PageToken: client.Opt(token)})
		}),
		create,
		r.byID("get OPERATION", "Show an operation", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
			return c.VmclusterOperationsGet(ctx, *vmc, id)
		}),
		r.byID("cancel OPERATION", "Cancel an operation", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
			return c.VmclusterOperationsCancel(ctx, *vmc, id)
		}),
		r.byID("pause OPERATION", "Pause an operation", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
			return c.VmclusterOperationsPause(ctx, *vmc, id)
		}),
		r.byID("resume OPERATION", "Resume a paused operation", func(ctx context.Context, c *client.Client, id string) (*http.Response, error) {
			return c.VmclusterOperationsResume(ctx, *vmc, id)
		}),
	)
	return cmd
}

func componentsCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "components", Aliases: []string{"component"}, Short: "Catalog charts installed as components"}
	r := resource{g: g, columns: componentTable}
	var ifMatch string
	update := r.update("update NAME -f FILE", "Change a component", func(ctx context.Context, c *client.Client, name string, body io.Reader) (*http.Response, error) {
		return c.ComponentsUpdateWithBody(ctx, name, &client.ComponentsUpdateParams{IfMatch: client.Opt(ifMatch)}, jsonType, body)
	})
	del := r.byID("delete NAME", "Uninstall a component", func(ctx context.Context, c *client.Client, name string) (*http.Response, error) {
		return c.ComponentsDelete(ctx, name, &client.ComponentsDeleteParams{IfMatch: client.Opt(ifMatch)})
	})
	ifMatchFlag(&ifMatch, "component", update, del)
	cmd.AddCommand(
		r.list("List components", "components", func(ctx context.Context, c *client.Client, token string) (*http.Response, error) {
			return c.ComponentsList(ctx, &client.ComponentsListParams{PageToken: client.Opt(token)})
		}),
		r.byID("get NAME", "Show a component", func(ctx context.Context, c *client.Client, name string) (*http.Response, error) {
			return c.ComponentsGet(ctx, name)
		}),
		r.create("Install a component", func(ctx context.Context, c *client.Client, key string, body io.Reader) (*http.Response, error) {
			return c.ComponentsCreateWithBody(ctx, &client.ComponentsCreateParams{IdempotencyKey: client.Opt(key)}, jsonType, body)
		}),
		update, del,
	)
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

// cloudCommand makes cmd, and its `list`, list what a cluster has in its
// cloud: both take the cluster's flags.
func cloudCommand(g *globals, cmd *cobra.Command, listShort string, t table, req func(ctx context.Context, c *client.Client, f cloudFlags) (*http.Response, error)) *cobra.Command {
	var f cloudFlags
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return g.run(func(c *client.Client) (*http.Response, error) { return req(ctxOf(cmd), c, f) }, t)
	}
	list := &cobra.Command{Use: "list", Short: listShort, Args: cobra.NoArgs, RunE: cmd.RunE}
	f.add(cmd)
	f.add(list)
	cmd.AddCommand(list)
	return cmd
}

func nodeGroupsCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "nodegroups", Aliases: []string{"nodegroup"}, Short: "A cluster's node groups, from the cloud"}
	return cloudCommand(g, cmd, "List a cluster's node groups", table{items: "nodeGroups", columns: []column{
		col("name", "name"), col("version", "version"), col("status", "status"), col("desired", "desiredSize"),
		col("min", "minSize"), col("max", "maxSize"), col("instance types", "instanceTypes"),
	}}, func(ctx context.Context, c *client.Client, f cloudFlags) (*http.Response, error) {
		return c.NodeGroupsList(ctx, &client.NodeGroupsListParams{
			K8sClusterName: f.cluster, Region: f.region, CloudProvider: client.NodeGroupsListParamsCloudProvider(f.provider),
		})
	})
}

func addonsCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "addons", Aliases: []string{"addon"}, Short: "A cluster's addons and the versions they can move to, from the cloud"}
	return cloudCommand(g, cmd, "List a cluster's addons", table{items: "addons", columns: []column{
		col("name", "name"), col("version", "version"), col("status", "status"), col("available", "availableVersions"),
	}}, func(ctx context.Context, c *client.Client, f cloudFlags) (*http.Response, error) {
		return c.AddonsList(ctx, &client.AddonsListParams{
			K8sClusterName: f.cluster, Region: f.region, CloudProvider: client.AddonsListParamsCloudProvider(f.provider),
		})
	})
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
