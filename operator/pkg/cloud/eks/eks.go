// Package eks implements cloud.Provider for Amazon EKS on
// github.com/aws/aws-sdk-go-v2/service/eks.
//
// Every mutating call passes the caller's idempotency token as EKS's
// ClientRequestToken, so a repeated Start with the same token returns the
// update (or node group) the first call started instead of starting a
// second one. Operation ids name what PollOperation has to describe:
//
//	cluster:<cluster>:<updateId>        UpdateClusterVersion -> DescribeUpdate
//	nodegroup:<group>:<updateId>        UpdateNodegroupVersion -> DescribeUpdate(nodegroupName)
//	addon:<addon>:<updateId>            UpdateAddon -> DescribeUpdate(addonName)
//	create-nodegroup:<group>            CreateNodegroup -> DescribeNodegroup until ACTIVE
//	delete-nodegroup:<group>            DeleteNodegroup -> DescribeNodegroup until ResourceNotFound
//
// SDK-level retries are off by default (MaxAttempts 1): the reconciler
// owns retrying, honours Retry-After and never blocks a worker in an SDK
// backoff loop.
package eks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// NodeGroupLabel is the label EKS managed node groups put on their Nodes.
const NodeGroupLabel = "eks.amazonaws.com/nodegroup"

// Keys of cloud.NodeGroup.Extra that StartCreateNodeGroup reads when it
// clones a node group. ListNodeGroups fills them from DescribeNodegroup.
const (
	// ExtraSource names the node group the settings were read from; when
	// it still exists, StartCreateNodeGroup copies every cloneable field
	// of it (remote access, update config, tags, ...), then applies the
	// explicit keys below and the NodeGroup's own fields.
	ExtraSource                = "source"
	ExtraNodeRole              = "nodeRole"
	ExtraSubnets               = "subnets" // comma-separated
	ExtraAMIType               = "amiType"
	ExtraCapacityType          = "capacityType"
	ExtraDiskSize              = "diskSize"
	ExtraLaunchTemplateID      = "launchTemplateId"
	ExtraLaunchTemplateName    = "launchTemplateName"
	ExtraLaunchTemplateVersion = "launchTemplateVersion"
)

// API is the part of the EKS client the provider uses. *eks.Client
// implements it; tests use the real client against ekstest.Server.
type API interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, optFns ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
	UpdateClusterVersion(ctx context.Context, in *eks.UpdateClusterVersionInput, optFns ...func(*eks.Options)) (*eks.UpdateClusterVersionOutput, error)
	DescribeUpdate(ctx context.Context, in *eks.DescribeUpdateInput, optFns ...func(*eks.Options)) (*eks.DescribeUpdateOutput, error)
	ListNodegroups(ctx context.Context, in *eks.ListNodegroupsInput, optFns ...func(*eks.Options)) (*eks.ListNodegroupsOutput, error)
	DescribeNodegroup(ctx context.Context, in *eks.DescribeNodegroupInput, optFns ...func(*eks.Options)) (*eks.DescribeNodegroupOutput, error)
	UpdateNodegroupVersion(ctx context.Context, in *eks.UpdateNodegroupVersionInput, optFns ...func(*eks.Options)) (*eks.UpdateNodegroupVersionOutput, error)
	CreateNodegroup(ctx context.Context, in *eks.CreateNodegroupInput, optFns ...func(*eks.Options)) (*eks.CreateNodegroupOutput, error)
	DeleteNodegroup(ctx context.Context, in *eks.DeleteNodegroupInput, optFns ...func(*eks.Options)) (*eks.DeleteNodegroupOutput, error)
	ListAddons(ctx context.Context, in *eks.ListAddonsInput, optFns ...func(*eks.Options)) (*eks.ListAddonsOutput, error)
	DescribeAddon(ctx context.Context, in *eks.DescribeAddonInput, optFns ...func(*eks.Options)) (*eks.DescribeAddonOutput, error)
	DescribeAddonVersions(ctx context.Context, in *eks.DescribeAddonVersionsInput, optFns ...func(*eks.Options)) (*eks.DescribeAddonVersionsOutput, error)
	UpdateAddon(ctx context.Context, in *eks.UpdateAddonInput, optFns ...func(*eks.Options)) (*eks.UpdateAddonOutput, error)
}

var _ API = (*eks.Client)(nil)

// Options configure the provider.
type Options struct {
	// Region is the default region; a ClusterRef's Region overrides it
	// per call.
	Region string
	// Endpoint overrides the EKS endpoint (tests, VPC endpoints).
	Endpoint string
	// Credentials overrides the SDK's default chain (environment, shared
	// config, IRSA web identity, EKS Pod Identity, IMDS).
	Credentials aws.CredentialsProvider
	// HTTPClient overrides the SDK's HTTP client.
	HTTPClient *http.Client
	// MaxAttempts is the SDK's attempts per call (default 1: the
	// reconciler retries).
	MaxAttempts int
	// PollInterval is the RetryAfter hint for a running operation
	// (default 30s).
	PollInterval time.Duration
	// API replaces the SDK client altogether (tests).
	API API
}

// Provider is the EKS cloud.Provider.
type Provider struct {
	api          API
	pollInterval time.Duration
}

var _ cloud.Provider = (*Provider)(nil)

// New builds the provider and its SDK client.
func New(ctx context.Context, o Options) (*Provider, error) {
	p := &Provider{api: o.API, pollInterval: o.PollInterval}
	if p.pollInterval <= 0 {
		p.pollInterval = 30 * time.Second
	}
	if p.api != nil {
		return p, nil
	}
	attempts := o.MaxAttempts
	if attempts <= 0 {
		attempts = 1
	}
	loaders := []func(*config.LoadOptions) error{config.WithRetryMaxAttempts(attempts)}
	if o.Region != "" {
		loaders = append(loaders, config.WithRegion(o.Region))
	}
	if o.Credentials != nil {
		loaders = append(loaders, config.WithCredentialsProvider(o.Credentials))
	}
	if o.HTTPClient != nil {
		loaders = append(loaders, config.WithHTTPClient(o.HTTPClient))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loaders...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %s", cloud.Sanitize(err.Error()))
	}
	p.api = eks.NewFromConfig(cfg, func(eo *eks.Options) {
		if o.Endpoint != "" {
			eo.BaseEndpoint = aws.String(o.Endpoint)
		}
	})
	return p, nil
}

func (p *Provider) Name() string           { return cloud.EKS }
func (p *Provider) NodeGroupLabel() string { return NodeGroupLabel }
func (p *Provider) SupportsAddons() bool   { return true }

// NodeSelector is the label selector of a node group's Nodes.
func (p *Provider) NodeSelector(_ context.Context, _ cloud.ClusterRef, group string) (map[string]string, error) {
	return map[string]string{NodeGroupLabel: group}, nil
}

// region sets the per-call region from the reference.
func region(c cloud.ClusterRef) []func(*eks.Options) {
	if c.Region == "" {
		return nil
	}
	r := c.Region
	return []func(*eks.Options){func(o *eks.Options) { o.Region = r }}
}

func (p *Provider) DescribeCluster(ctx context.Context, c cloud.ClusterRef) (*cloud.Cluster, error) {
	out, err := p.api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(c.Name)}, region(c)...)
	if err != nil {
		return nil, classify("DescribeCluster", err)
	}
	if out.Cluster == nil {
		return nil, cloud.Errorf(cloud.Retryable, cloud.EKS, "DescribeCluster", "empty response for cluster %q", c.Name)
	}
	return &cloud.Cluster{Name: aws.ToString(out.Cluster.Name), Version: aws.ToString(out.Cluster.Version), Status: string(out.Cluster.Status)}, nil
}

func (p *Provider) StartControlPlaneUpgrade(ctx context.Context, c cloud.ClusterRef, version, token string) (string, error) {
	out, err := p.api.UpdateClusterVersion(ctx, &eks.UpdateClusterVersionInput{
		Name: aws.String(c.Name), Version: aws.String(minorVersion(version)), ClientRequestToken: tokenPtr(token),
	}, region(c)...)
	if err != nil {
		return "", classify("UpdateClusterVersion", err)
	}
	return updateOpID(kindCluster, c.Name, out.Update)
}

func (p *Provider) ListNodeGroups(ctx context.Context, c cloud.ClusterRef) ([]cloud.NodeGroup, error) {
	var names []string
	var next *string
	for {
		out, err := p.api.ListNodegroups(ctx, &eks.ListNodegroupsInput{ClusterName: aws.String(c.Name), NextToken: next}, region(c)...)
		if err != nil {
			return nil, classify("ListNodegroups", err)
		}
		names = append(names, out.Nodegroups...)
		if aws.ToString(out.NextToken) == "" {
			break
		}
		next = out.NextToken
	}
	groups := make([]cloud.NodeGroup, 0, len(names))
	for _, name := range names {
		ng, err := p.describeNodegroup(ctx, c, name)
		if cloud.IsNotFound(err) {
			continue // deleted between the list and the describe
		}
		if err != nil {
			return nil, err
		}
		groups = append(groups, fromNodegroup(ng))
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	return groups, nil
}

func (p *Provider) describeNodegroup(ctx context.Context, c cloud.ClusterRef, name string) (*types.Nodegroup, error) {
	out, err := p.api.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String(c.Name), NodegroupName: aws.String(name)}, region(c)...)
	if err != nil {
		return nil, classify("DescribeNodegroup", err)
	}
	if out.Nodegroup == nil {
		return nil, cloud.Errorf(cloud.Retryable, cloud.EKS, "DescribeNodegroup", "empty response for node group %q", name)
	}
	return out.Nodegroup, nil
}

func (p *Provider) StartNodeGroupUpgrade(ctx context.Context, c cloud.ClusterRef, group, version, token string) (string, error) {
	out, err := p.api.UpdateNodegroupVersion(ctx, &eks.UpdateNodegroupVersionInput{
		ClusterName: aws.String(c.Name), NodegroupName: aws.String(group),
		Version: aws.String(minorVersion(version)), ClientRequestToken: tokenPtr(token),
	}, region(c)...)
	if err != nil {
		return "", classify("UpdateNodegroupVersion", err)
	}
	return updateOpID(kindNodegroup, group, out.Update)
}

func (p *Provider) StartCreateNodeGroup(ctx context.Context, c cloud.ClusterRef, g cloud.NodeGroup, token string) (string, error) {
	in := &eks.CreateNodegroupInput{ClusterName: aws.String(c.Name), NodegroupName: aws.String(g.Name), ClientRequestToken: tokenPtr(token)}
	if src := g.Extra[ExtraSource]; src != "" && src != g.Name {
		old, err := p.describeNodegroup(ctx, c, src)
		switch {
		case err == nil:
			copyCloneable(in, old)
		case !cloud.IsNotFound(err):
			return "", err
		}
	}
	if err := applyGroup(in, g); err != nil {
		return "", err
	}
	if _, err := p.api.CreateNodegroup(ctx, in, region(c)...); err != nil {
		return "", classify("CreateNodegroup", err)
	}
	return joinOpID(kindCreate, g.Name, ""), nil
}

func (p *Provider) StartDeleteNodeGroup(ctx context.Context, c cloud.ClusterRef, name, token string) (string, error) {
	_, err := p.api.DeleteNodegroup(ctx, &eks.DeleteNodegroupInput{ClusterName: aws.String(c.Name), NodegroupName: aws.String(name)}, region(c)...)
	if err != nil {
		cerr := classify("DeleteNodegroup", err)
		// DeleteNodegroup has no client token. A repeat (after a crash)
		// finds the group DELETING, which EKS answers with
		// ResourceInUseException: that is the operation we started.
		var inUse *types.ResourceInUseException
		if errors.As(err, &inUse) {
			ng, derr := p.describeNodegroup(ctx, c, name)
			if derr == nil && ng.Status == types.NodegroupStatusDeleting {
				return joinOpID(kindDelete, name, ""), nil
			}
		}
		return "", cerr
	}
	return joinOpID(kindDelete, name, ""), nil
}

func (p *Provider) ListAddons(ctx context.Context, c cloud.ClusterRef) ([]cloud.Addon, error) {
	var names []string
	var next *string
	for {
		out, err := p.api.ListAddons(ctx, &eks.ListAddonsInput{ClusterName: aws.String(c.Name), NextToken: next}, region(c)...)
		if err != nil {
			return nil, classify("ListAddons", err)
		}
		names = append(names, out.Addons...)
		if aws.ToString(out.NextToken) == "" {
			break
		}
		next = out.NextToken
	}
	if len(names) == 0 {
		return nil, nil
	}
	cluster, err := p.DescribeCluster(ctx, c)
	if err != nil {
		return nil, err
	}
	addons := make([]cloud.Addon, 0, len(names))
	for _, name := range names {
		out, err := p.api.DescribeAddon(ctx, &eks.DescribeAddonInput{ClusterName: aws.String(c.Name), AddonName: aws.String(name)}, region(c)...)
		if err != nil {
			if cerr := classify("DescribeAddon", err); cloud.IsNotFound(cerr) {
				continue
			} else {
				return nil, cerr
			}
		}
		a := cloud.Addon{Name: name}
		if out.Addon != nil {
			a.Version, a.Status = aws.ToString(out.Addon.AddonVersion), string(out.Addon.Status)
		}
		if a.AvailableVersions, err = p.addonVersions(ctx, c, name, cluster.Version); err != nil {
			return nil, err
		}
		addons = append(addons, a)
	}
	sort.Slice(addons, func(i, j int) bool { return addons[i].Name < addons[j].Name })
	return addons, nil
}

// addonVersions lists the versions of an addon compatible with the
// cluster's Kubernetes version, newest first as EKS reports them.
func (p *Provider) addonVersions(ctx context.Context, c cloud.ClusterRef, addon, k8sVersion string) ([]string, error) {
	var versions []string
	seen := map[string]bool{}
	var next *string
	for {
		out, err := p.api.DescribeAddonVersions(ctx, &eks.DescribeAddonVersionsInput{
			AddonName: aws.String(addon), KubernetesVersion: aws.String(minorVersion(k8sVersion)), NextToken: next,
		}, region(c)...)
		if err != nil {
			return nil, classify("DescribeAddonVersions", err)
		}
		for _, info := range out.Addons {
			if aws.ToString(info.AddonName) != addon {
				continue
			}
			for _, v := range info.AddonVersions {
				if s := aws.ToString(v.AddonVersion); s != "" && !seen[s] {
					seen[s] = true
					versions = append(versions, s)
				}
			}
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		next = out.NextToken
	}
	return versions, nil
}

func (p *Provider) StartAddonUpdate(ctx context.Context, c cloud.ClusterRef, u cloud.AddonUpdate, token string) (string, error) {
	in := &eks.UpdateAddonInput{
		ClusterName: aws.String(c.Name), AddonName: aws.String(u.Name),
		AddonVersion: aws.String(u.Version), ClientRequestToken: tokenPtr(token),
	}
	if u.ResolveConflicts != "" {
		rc := types.ResolveConflicts(strings.ToUpper(u.ResolveConflicts))
		switch rc {
		case types.ResolveConflictsNone, types.ResolveConflictsOverwrite, types.ResolveConflictsPreserve:
		default:
			return "", cloud.Errorf(cloud.Permanent, cloud.EKS, "UpdateAddon", "resolveConflicts %q is not one of NONE, OVERWRITE, PRESERVE", u.ResolveConflicts)
		}
		in.ResolveConflicts = rc
	}
	out, err := p.api.UpdateAddon(ctx, in, region(c)...)
	if err != nil {
		return "", classify("UpdateAddon", err)
	}
	return updateOpID(kindAddon, u.Name, out.Update)
}

func (p *Provider) PollOperation(ctx context.Context, c cloud.ClusterRef, opID string) (*cloud.OperationStatus, error) {
	kind, target, updateID, err := parseOpID(opID)
	if err != nil {
		return nil, err
	}
	switch kind {
	case kindCluster, kindNodegroup, kindAddon:
		in := &eks.DescribeUpdateInput{Name: aws.String(c.Name), UpdateId: aws.String(updateID)}
		switch kind {
		case kindNodegroup:
			in.NodegroupName = aws.String(target)
		case kindAddon:
			in.AddonName = aws.String(target)
		}
		out, err := p.api.DescribeUpdate(ctx, in, region(c)...)
		if err != nil {
			return nil, classify("DescribeUpdate", err)
		}
		return p.updateStatus(out.Update), nil
	case kindCreate:
		ng, err := p.describeNodegroup(ctx, c, target)
		if err != nil {
			if cloud.IsNotFound(err) {
				return &cloud.OperationStatus{State: cloud.OperationFailed, Message: fmt.Sprintf("node group %q no longer exists", target)}, nil
			}
			return nil, err
		}
		switch ng.Status {
		case types.NodegroupStatusActive:
			return &cloud.OperationStatus{State: cloud.OperationSucceeded}, nil
		case types.NodegroupStatusCreating:
			return &cloud.OperationStatus{State: cloud.OperationRunning, RetryAfter: p.pollInterval}, nil
		default:
			return &cloud.OperationStatus{State: cloud.OperationFailed, Message: fmt.Sprintf("node group %q is %s%s", target, ng.Status, healthIssues(ng))}, nil
		}
	case kindDelete:
		ng, err := p.describeNodegroup(ctx, c, target)
		if cloud.IsNotFound(err) {
			return &cloud.OperationStatus{State: cloud.OperationSucceeded}, nil
		}
		if err != nil {
			return nil, err
		}
		if ng.Status == types.NodegroupStatusDeleting {
			return &cloud.OperationStatus{State: cloud.OperationRunning, RetryAfter: p.pollInterval}, nil
		}
		return &cloud.OperationStatus{State: cloud.OperationFailed, Message: fmt.Sprintf("node group %q is %s, not being deleted%s", target, ng.Status, healthIssues(ng))}, nil
	}
	return nil, cloud.Errorf(cloud.Permanent, cloud.EKS, "PollOperation", "unknown operation id %q", opID)
}

func (p *Provider) updateStatus(u *types.Update) *cloud.OperationStatus {
	if u == nil {
		return &cloud.OperationStatus{State: cloud.OperationRunning, RetryAfter: p.pollInterval}
	}
	switch u.Status {
	case types.UpdateStatusSuccessful:
		return &cloud.OperationStatus{State: cloud.OperationSucceeded}
	case types.UpdateStatusFailed, types.UpdateStatusCancelled:
		var msgs []string
		for _, e := range u.Errors {
			msgs = append(msgs, strings.TrimSpace(string(e.ErrorCode)+": "+aws.ToString(e.ErrorMessage)))
		}
		msg := fmt.Sprintf("update %s is %s", aws.ToString(u.Id), u.Status)
		if len(msgs) > 0 {
			msg += ": " + strings.Join(msgs, "; ")
		}
		return &cloud.OperationStatus{State: cloud.OperationFailed, Message: cloud.Sanitize(msg)}
	default:
		return &cloud.OperationStatus{State: cloud.OperationRunning, RetryAfter: p.pollInterval}
	}
}

// Operation id kinds.
const (
	kindCluster   = "cluster"
	kindNodegroup = "nodegroup"
	kindAddon     = "addon"
	kindCreate    = "create-nodegroup"
	kindDelete    = "delete-nodegroup"
)

func updateOpID(kind, target string, u *types.Update) (string, error) {
	if u == nil || aws.ToString(u.Id) == "" {
		return "", cloud.Errorf(cloud.Retryable, cloud.EKS, "", "EKS returned no update id for %s %q", kind, target)
	}
	return joinOpID(kind, target, aws.ToString(u.Id)), nil
}

func joinOpID(kind, target, updateID string) string {
	if updateID == "" {
		return kind + ":" + target
	}
	return kind + ":" + target + ":" + updateID
}

// parseOpID splits an operation id; EKS names and update ids never hold a
// colon.
func parseOpID(id string) (kind, target, updateID string, err error) {
	parts := strings.Split(id, ":")
	bad := cloud.Errorf(cloud.Permanent, cloud.EKS, "PollOperation", "malformed operation id %q", id)
	if len(parts) < 2 || parts[1] == "" {
		return "", "", "", bad
	}
	kind, target = parts[0], parts[1]
	switch kind {
	case kindCluster, kindNodegroup, kindAddon:
		if len(parts) != 3 || parts[2] == "" {
			return "", "", "", bad
		}
		updateID = parts[2]
	case kindCreate, kindDelete:
		if len(parts) != 2 {
			return "", "", "", bad
		}
	default:
		return "", "", "", bad
	}
	return kind, target, updateID, nil
}

func tokenPtr(token string) *string {
	if token == "" {
		return nil
	}
	return aws.String(token)
}

// minorVersion turns "v1.30.4" or "1.30.4-eks-..." into EKS's "1.30".
func minorVersion(v string) string {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) >= 2 {
		return parts[0] + "." + parts[1]
	}
	return v
}

func fromNodegroup(ng *types.Nodegroup) cloud.NodeGroup {
	g := cloud.NodeGroup{
		Name:          aws.ToString(ng.NodegroupName),
		Version:       aws.ToString(ng.Version),
		Status:        string(ng.Status),
		InstanceTypes: append([]string(nil), ng.InstanceTypes...),
		Labels:        maps.Clone(ng.Labels),
		Extra:         map[string]string{ExtraSource: aws.ToString(ng.NodegroupName)},
	}
	if s := ng.ScalingConfig; s != nil {
		g.DesiredSize, g.MinSize, g.MaxSize = aws.ToInt32(s.DesiredSize), aws.ToInt32(s.MinSize), aws.ToInt32(s.MaxSize)
	}
	for _, t := range ng.Taints {
		g.Taints = append(g.Taints, cloud.Taint{Key: aws.ToString(t.Key), Value: aws.ToString(t.Value), Effect: effectToK8s(t.Effect)})
	}
	set := func(k, v string) {
		if v != "" {
			g.Extra[k] = v
		}
	}
	set(ExtraNodeRole, aws.ToString(ng.NodeRole))
	set(ExtraSubnets, strings.Join(ng.Subnets, ","))
	set(ExtraAMIType, string(ng.AmiType))
	set(ExtraCapacityType, string(ng.CapacityType))
	if ng.DiskSize != nil {
		set(ExtraDiskSize, strconv.Itoa(int(*ng.DiskSize)))
	}
	if lt := ng.LaunchTemplate; lt != nil {
		set(ExtraLaunchTemplateID, aws.ToString(lt.Id))
		set(ExtraLaunchTemplateName, aws.ToString(lt.Name))
		set(ExtraLaunchTemplateVersion, aws.ToString(lt.Version))
	}
	return g
}

// copyCloneable copies the settings of an existing node group that a
// clone keeps.
func copyCloneable(in *eks.CreateNodegroupInput, old *types.Nodegroup) {
	in.NodeRole = old.NodeRole
	in.Subnets = append([]string(nil), old.Subnets...)
	in.AmiType = old.AmiType
	in.CapacityType = old.CapacityType
	in.DiskSize = old.DiskSize
	in.RemoteAccess = old.RemoteAccess
	in.UpdateConfig = old.UpdateConfig
	in.NodeRepairConfig = old.NodeRepairConfig
	in.Tags = maps.Clone(old.Tags)
	if lt := old.LaunchTemplate; lt != nil {
		// Reference the template by id only: EKS rejects id and name together.
		in.LaunchTemplate = &types.LaunchTemplateSpecification{Id: lt.Id, Version: lt.Version}
		if lt.Id == nil {
			in.LaunchTemplate.Name = lt.Name
		}
	}
}

// applyGroup applies the NodeGroup's fields and explicit Extra keys, and
// checks what EKS requires.
func applyGroup(in *eks.CreateNodegroupInput, g cloud.NodeGroup) error {
	x := g.Extra
	if v := x[ExtraNodeRole]; v != "" {
		in.NodeRole = aws.String(v)
	}
	if v := x[ExtraSubnets]; v != "" {
		in.Subnets = splitList(v)
	}
	if v := x[ExtraAMIType]; v != "" {
		in.AmiType = types.AMITypes(v)
	}
	if v := x[ExtraCapacityType]; v != "" {
		in.CapacityType = types.CapacityTypes(v)
	}
	if v := x[ExtraDiskSize]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return cloud.Errorf(cloud.Permanent, cloud.EKS, "CreateNodegroup", "invalid %s %q", ExtraDiskSize, v)
		}
		in.DiskSize = aws.Int32(int32(n))
	}
	if id, name := x[ExtraLaunchTemplateID], x[ExtraLaunchTemplateName]; id != "" || name != "" {
		lt := &types.LaunchTemplateSpecification{}
		if id != "" {
			lt.Id = aws.String(id)
		} else {
			lt.Name = aws.String(name)
		}
		if v := x[ExtraLaunchTemplateVersion]; v != "" {
			lt.Version = aws.String(v)
		}
		in.LaunchTemplate = lt
	}
	if in.LaunchTemplate != nil {
		// Disk size and remote access live in the launch template.
		in.DiskSize, in.RemoteAccess = nil, nil
	}
	desired, minSize, maxSize := g.DesiredSize, g.MinSize, g.MaxSize
	if maxSize < desired {
		maxSize = desired
	}
	if maxSize < 1 {
		maxSize = 1
	}
	if minSize > desired {
		minSize = desired
	}
	in.ScalingConfig = &types.NodegroupScalingConfig{DesiredSize: aws.Int32(desired), MinSize: aws.Int32(minSize), MaxSize: aws.Int32(maxSize)}
	if len(g.InstanceTypes) > 0 {
		in.InstanceTypes = append([]string(nil), g.InstanceTypes...)
	}
	in.Labels = maps.Clone(g.Labels)
	in.Taints = nil
	for _, t := range g.Taints {
		eff, err := effectFromK8s(t.Effect)
		if err != nil {
			return err
		}
		in.Taints = append(in.Taints, types.Taint{Key: aws.String(t.Key), Value: optString(t.Value), Effect: eff})
	}
	// A custom AMI (in the launch template) carries its own version.
	if g.Version != "" && in.AmiType != types.AMITypesCustom {
		in.Version = aws.String(minorVersion(g.Version))
	}
	if aws.ToString(in.NodeRole) == "" || len(in.Subnets) == 0 {
		return cloud.Errorf(cloud.Permanent, cloud.EKS, "CreateNodegroup",
			"node group %q needs a node role and subnets: clone it from an existing group (Extra %q) or set Extra %q and %q", g.Name, ExtraSource, ExtraNodeRole, ExtraSubnets)
	}
	return nil
}

func effectToK8s(e types.TaintEffect) string {
	switch e {
	case types.TaintEffectNoSchedule:
		return "NoSchedule"
	case types.TaintEffectNoExecute:
		return "NoExecute"
	case types.TaintEffectPreferNoSchedule:
		return "PreferNoSchedule"
	}
	return string(e)
}

func effectFromK8s(e string) (types.TaintEffect, error) {
	switch e {
	case "NoSchedule", string(types.TaintEffectNoSchedule):
		return types.TaintEffectNoSchedule, nil
	case "NoExecute", string(types.TaintEffectNoExecute):
		return types.TaintEffectNoExecute, nil
	case "PreferNoSchedule", string(types.TaintEffectPreferNoSchedule):
		return types.TaintEffectPreferNoSchedule, nil
	}
	return "", cloud.Errorf(cloud.Permanent, cloud.EKS, "CreateNodegroup", "unknown taint effect %q", e)
}

func healthIssues(ng *types.Nodegroup) string {
	if ng.Health == nil || len(ng.Health.Issues) == 0 {
		return ""
	}
	var msgs []string
	for _, i := range ng.Health.Issues {
		msgs = append(msgs, string(i.Code)+": "+aws.ToString(i.Message))
	}
	return ": " + cloud.Sanitize(strings.Join(msgs, "; "))
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// AddonVersionsFor lists the versions of addon EKS reports compatible with
// Kubernetes k8sVersion (DescribeAddonVersions): cloud.AddonCompatibility.
func (p *Provider) AddonVersionsFor(ctx context.Context, c cloud.ClusterRef, addon, k8sVersion string) ([]string, error) {
	return p.addonVersions(ctx, c, addon, k8sVersion)
}
