package cloud

import (
	"context"
	"errors"
)

// CallObserver is told of every call a provider resolved by a Registry
// answered: the provider, the operation (the Provider method) and its
// error, nil on success. ops-operator counts them
// (ops_cloud_calls_total).
type CallObserver func(provider, operation string, err error)

// CallResult is the result label of an observed call: "Success", the
// kind of a classified cloud error, or "Error" for anything else.
func CallResult(err error) string {
	if err == nil {
		return "Success"
	}
	var ce *Error
	if errors.As(err, &ce) {
		return string(ce.Kind)
	}
	return "Error"
}

// observe wraps p so that every call is reported to fn. The wrapper has the
// optional interfaces (NodeGroupSelector, VersionLister) exactly when p
// has them, so a type assertion on it answers as on p.
func observe(p Provider, fn CallObserver) Provider {
	o := &observed{p: p, fn: fn}
	sel, isSel := p.(NodeGroupSelector)
	ver, isVer := p.(VersionLister)
	switch {
	case isSel && isVer:
		return &struct {
			*observed
			*observedSelector
			*observedVersions
		}{o, &observedSelector{o, sel}, &observedVersions{o, ver}}
	case isSel:
		return &struct {
			*observed
			*observedSelector
		}{o, &observedSelector{o, sel}}
	case isVer:
		return &struct {
			*observed
			*observedVersions
		}{o, &observedVersions{o, ver}}
	}
	return o
}

type observed struct {
	p  Provider
	fn CallObserver
}

func (o *observed) done(op string, err error) { o.fn(o.p.Name(), op, err) }

func (o *observed) Name() string           { return o.p.Name() }
func (o *observed) NodeGroupLabel() string { return o.p.NodeGroupLabel() }
func (o *observed) SupportsAddons() bool   { return o.p.SupportsAddons() }

func (o *observed) DescribeCluster(ctx context.Context, c ClusterRef) (*Cluster, error) {
	out, err := o.p.DescribeCluster(ctx, c)
	o.done("DescribeCluster", err)
	return out, err
}

func (o *observed) StartControlPlaneUpgrade(ctx context.Context, c ClusterRef, version, token string) (string, error) {
	id, err := o.p.StartControlPlaneUpgrade(ctx, c, version, token)
	o.done("StartControlPlaneUpgrade", err)
	return id, err
}

func (o *observed) ListNodeGroups(ctx context.Context, c ClusterRef) ([]NodeGroup, error) {
	out, err := o.p.ListNodeGroups(ctx, c)
	o.done("ListNodeGroups", err)
	return out, err
}

func (o *observed) StartNodeGroupUpgrade(ctx context.Context, c ClusterRef, group, version, token string) (string, error) {
	id, err := o.p.StartNodeGroupUpgrade(ctx, c, group, version, token)
	o.done("StartNodeGroupUpgrade", err)
	return id, err
}

func (o *observed) StartCreateNodeGroup(ctx context.Context, c ClusterRef, group NodeGroup, token string) (string, error) {
	id, err := o.p.StartCreateNodeGroup(ctx, c, group, token)
	o.done("StartCreateNodeGroup", err)
	return id, err
}

func (o *observed) StartDeleteNodeGroup(ctx context.Context, c ClusterRef, name, token string) (string, error) {
	id, err := o.p.StartDeleteNodeGroup(ctx, c, name, token)
	o.done("StartDeleteNodeGroup", err)
	return id, err
}

func (o *observed) ListAddons(ctx context.Context, c ClusterRef) ([]Addon, error) {
	out, err := o.p.ListAddons(ctx, c)
	o.done("ListAddons", err)
	return out, err
}

func (o *observed) StartAddonUpdate(ctx context.Context, c ClusterRef, u AddonUpdate, token string) (string, error) {
	id, err := o.p.StartAddonUpdate(ctx, c, u, token)
	o.done("StartAddonUpdate", err)
	return id, err
}

func (o *observed) PollOperation(ctx context.Context, c ClusterRef, opID string) (*OperationStatus, error) {
	out, err := o.p.PollOperation(ctx, c, opID)
	o.done("PollOperation", err)
	return out, err
}

type observedSelector struct {
	o *observed
	s NodeGroupSelector
}

func (w *observedSelector) NodeSelector(ctx context.Context, c ClusterRef, group string) (map[string]string, error) {
	out, err := w.s.NodeSelector(ctx, c, group)
	w.o.done("NodeSelector", err)
	return out, err
}

type observedVersions struct {
	o *observed
	v VersionLister
}

func (w *observedVersions) AvailableVersions(ctx context.Context, c ClusterRef) ([]string, error) {
	out, err := w.v.AvailableVersions(ctx, c)
	w.o.done("AvailableVersions", err)
	return out, err
}
