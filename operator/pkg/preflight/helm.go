package preflight

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Flux's HelmRelease status keeps the history of chart versions and
// digests, not the objects a release rendered; Helm's own release record
// does: the Secret sh.helm.release.v1.<release>.v<revision> (type
// helm.sh/release.v1) holds the release, base64- and gzip-encoded JSON
// with its rendered manifest. The deployed revision of each release is
// read.

// HelmReleaseSecretType is the type of Helm's release Secrets.
const HelmReleaseSecretType = "helm.sh/release.v1"

// maxReleaseBytes bounds a decoded release (Secrets are at most 1 MiB;
// gzip makes it larger).
const maxReleaseBytes = 32 << 20

// RenderedObject is one object of a release's manifest.
type RenderedObject struct {
	APIVersion string
	Kind       string
	Name       string
}

// DecodeRelease decodes a Helm release Secret's data.release: the
// release's name, namespace and rendered objects.
func DecodeRelease(data []byte) (name, namespace string, objects []RenderedObject, err error) {
	raw, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return "", "", nil, fmt.Errorf("decoding the release: %w", err)
	}
	if len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return "", "", nil, fmt.Errorf("decompressing the release: %w", err)
		}
		if raw, err = io.ReadAll(io.LimitReader(zr, maxReleaseBytes)); err != nil {
			return "", "", nil, fmt.Errorf("decompressing the release: %w", err)
		}
	}
	var rel struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Manifest  string `json:"manifest"`
	}
	if err := json.Unmarshal(raw, &rel); err != nil {
		return "", "", nil, fmt.Errorf("reading the release: %w", err)
	}
	for _, doc := range splitYAML(rel.Manifest) {
		var o struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil || o.Kind == "" {
			continue
		}
		objects = append(objects, RenderedObject{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Metadata.Name})
	}
	return rel.Name, rel.Namespace, objects, nil
}

func splitYAML(manifest string) []string {
	var docs []string
	var cur strings.Builder
	for _, line := range strings.Split(manifest, "\n") {
		if strings.HasPrefix(line, "---") {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	return append(docs, cur.String())
}

// removedAPIs reports Helm releases whose deployed manifest renders an API
// version removed between the cluster's version and the target, and live
// objects last written through one (their managedFields).
func removedAPIs(ctx context.Context, in Input, current string) (opsv1.PreflightCheck, error) {
	entries := removedBetween(current, in.Target)
	if len(entries) == 0 {
		return check(opsv1.PreflightCheckRemovedAPIs, nil, nil,
			[]string{fmt.Sprintf("no API version is removed between %s and %s (Deprecated API Migration Guide)", current, in.Target)}, ""), nil
	}
	if in.Kube == nil {
		return notChecked(opsv1.PreflightCheckRemovedAPIs, "no Kubernetes client"), nil
	}
	var problems, warnings, passed []string
	releases := 0
	for _, ns := range in.HelmNamespaces {
		list := &corev1.SecretList{}
		err := in.Kube.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "status": "deployed"})
		if apierrors.IsForbidden(err) {
			warnings = append(warnings, fmt.Sprintf("not checked: Helm releases in namespace %s (reading their Secrets is forbidden)", ns))
			continue
		}
		if err != nil {
			return opsv1.PreflightCheck{}, fmt.Errorf("listing Helm release Secrets in namespace %s: %w", ns, err)
		}
		sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
		for _, s := range list.Items {
			if s.Type != HelmReleaseSecretType {
				continue
			}
			releases++
			name, relNS, objects, err := DecodeRelease(s.Data["release"])
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("Helm release Secret %s/%s not read: %v", s.Namespace, s.Name, err))
				continue
			}
			if relNS == "" {
				relNS = s.Namespace
			}
			for _, o := range objects {
				if r, ok := removedAPI(entries, o.APIVersion, o.Kind); ok {
					problems = append(problems, fmt.Sprintf("Helm release %s/%s renders %s %q with apiVersion %s, removed in Kubernetes %s%s",
						relNS, name, o.Kind, o.Name, o.APIVersion, r.RemovedIn, replacement(r)))
				}
			}
		}
	}
	passed = append(passed, fmt.Sprintf("%d deployed Helm releases read in %s", releases, strings.Join(in.HelmNamespaces, ", ")))
	live, notRead, err := liveObjects(ctx, in.Kube, entries)
	if err != nil {
		return opsv1.PreflightCheck{}, err
	}
	problems = append(problems, live...)
	warnings = append(warnings, notRead...)
	return check(opsv1.PreflightCheckRemovedAPIs, problems, warnings, passed,
		"render the chart (or change the manifests) with the replacement apiVersion and upgrade the release before the cluster; "+
			"source: https://kubernetes.io/docs/reference/using-api/deprecation-guide/"), nil
}

func replacement(r RemovedAPI) string {
	if r.Replacement == "" {
		return " (no replacement)"
	}
	return "; use " + r.Replacement
}

// liveObjects lists, for each removed API version the cluster still
// serves, the objects whose managedFields show a write through it.
// A removed version the caller may not list is a warning.
func liveObjects(ctx context.Context, kube client.Reader, entries []RemovedAPI) (found, notRead []string, err error) {
	var out []string
	for _, r := range entries {
		gv, err := schema.ParseGroupVersion(r.GroupVersion)
		if err != nil {
			continue
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gv.WithKind(r.Kind + "List"))
		err = kube.List(ctx, list)
		switch {
		case meta.IsNoMatchError(err), apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err):
			continue // not served: nothing to find
		case apierrors.IsForbidden(err):
			notRead = append(notRead, fmt.Sprintf("not checked: live %s objects (listing them is forbidden)", r.GroupVersion+" "+r.Kind))
			continue
		case err != nil && strings.Contains(err.Error(), "no matches for kind"):
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("listing %s %s: %w", r.GroupVersion, r.Kind, err)
		}
		for _, o := range list.Items {
			for _, mf := range o.ManagedFields {
				if mf.APIVersion == r.GroupVersion {
					name := o.Name
					if o.Namespace != "" {
						name = o.Namespace + "/" + o.Name
					}
					out = append(out, fmt.Sprintf("%s %s was written by %s with apiVersion %s, removed in Kubernetes %s%s",
						r.Kind, name, mf.Manager, r.GroupVersion, r.RemovedIn, replacement(r)))
					break
				}
			}
		}
	}
	return out, notRead, nil
}
