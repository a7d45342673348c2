package troubleshoot

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tidbcloud/ops-server/apiserver/internal/events"
)

// refs are the objects of a vmcluster whose Events are its Events: its
// HelmRelease and HelmRepository, and every object of its tree.
func (s *Service) refs(o *objects) []events.Ref {
	name := strings.TrimPrefix(o.vm.Name, "vmclusters/")
	out := []events.Ref{
		{Kind: "HelmRelease", Namespace: s.HelmNamespace, Name: name, UID: types.UID(o.vm.ID)},
		{Kind: "HelmRepository", Namespace: s.HelmNamespace, Name: name},
	}
	if o.vmcluster != nil {
		out = append(out, events.Ref{Kind: VMClusterGVK.Kind, Namespace: o.namespace, Name: o.vmcluster.GetName(), UID: o.vmcluster.GetUID()})
	}
	add := func(kind, name string, uid types.UID) {
		out = append(out, events.Ref{Kind: kind, Namespace: o.namespace, Name: name, UID: uid})
	}
	for _, x := range o.sets {
		add("StatefulSet", x.Name, x.UID)
	}
	for _, x := range o.deploys {
		add("Deployment", x.Name, x.UID)
	}
	for _, x := range o.rsets {
		add("ReplicaSet", x.Name, x.UID)
	}
	for _, x := range o.services {
		add("Service", x.Name, x.UID)
	}
	for _, x := range o.pods {
		add("Pod", x.Name, x.UID)
	}
	for _, x := range o.pvcs {
		add("PersistentVolumeClaim", x.Name, x.UID)
	}
	return out
}

// Events returns a page of the Events of a vmcluster, newest first.
func (s *Service) Events(ctx context.Context, id string, q events.Query) (events.List, error) {
	o, err := s.load(ctx, id, true)
	if err != nil {
		return events.List{}, err
	}
	return events.Page(ctx, s.Reader, s.refs(o), q)
}
