package components

import (
	"encoding/json"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// LabelComponent names the component of a HelmRelease and its
// HelmRepository. A vmcluster's objects carry vmclusters.LabelVMCluster
// instead, so neither resource lists the other's releases.
const LabelComponent = "observability.tidbcloud.com/component"

// Labels returns the labels of the objects of component name.
func Labels(name string) map[string]string {
	return map[string]string{vmclusters.LabelManagedBy: vmclusters.ManagedBy, LabelComponent: name}
}

// IsManaged reports whether hr is a component created by ops-server.
func IsManaged(hr *helmv2.HelmRelease) bool {
	return hr.Labels[vmclusters.LabelManagedBy] == vmclusters.ManagedBy && hr.Labels[LabelComponent] == hr.Name &&
		hr.Labels[vmclusters.LabelVMCluster] == ""
}

// Release builds the HelmRelease of a new component: a vmcluster's
// release (the same Flux settings) with the component's labels, its chart
// and, for a namespace other than home, spec.targetNamespace.
func Release(t vmclusters.Translator, req CreateRequest, home string, now time.Time) *helmv2.HelmRelease {
	hr := t.Release(vmclusters.CreateRequest{Name: req.Name, Values: req.Values, Version: req.Version}, now)
	hr.Labels = t.ObjectLabels(Labels(req.Name))
	idempotency.Annotate(hr, req.IdempotencyKey)
	if req.Namespace != "" && req.Namespace != home {
		hr.Spec.TargetNamespace = req.Namespace
	}
	return hr
}

// Source builds the HelmRepository of the component of hr.
func Source(t vmclusters.Translator, hr *helmv2.HelmRelease, now time.Time) *sourcev1.HelmRepository {
	repo := t.Source(hr, now)
	repo.Labels = t.ObjectLabels(Labels(hr.Name))
	return repo
}

// SameAsRequest reports whether hr is what req would create.
func SameAsRequest(t vmclusters.Translator, hr *helmv2.HelmRelease, req CreateRequest, home string) bool {
	ns := req.Namespace
	if ns == "" {
		ns = home
	}
	if hr.GetReleaseNamespace() != ns {
		return false
	}
	return t.SameAsRequest(hr, vmclusters.CreateRequest{Name: req.Name, Values: req.Values, Version: req.Version})
}

// View is the REST representation of hr; full adds the values.
func View(hr *helmv2.HelmRelease, full bool) Component {
	vm := vmclusters.Translator{}.View(hr, false)
	v := Component{
		Name:            CollectionPrefix + hr.Name,
		ID:              string(hr.UID),
		Chart:           vm.HelmReleaseInfo.Chart,
		Version:         vm.HelmReleaseInfo.Version,
		DeployedVersion: vm.HelmReleaseInfo.DeployedVersion,
		Namespace:       hr.GetReleaseNamespace(),
		Status:          vm.Status,
		StatusReason:    vm.StatusReason,
		StatusMessage:   vm.StatusMessage,
		LastAction:      vm.HelmReleaseInfo.LastAction,
		CreateTime:      vm.CreateTime,
		ETag:            vm.ETag,
	}
	if full {
		v.Values = json.RawMessage("{}")
		if hr.Spec.Values != nil && len(hr.Spec.Values.Raw) > 0 {
			v.Values = json.RawMessage(hr.Spec.Values.Raw)
		}
	}
	return v
}
