#!/usr/bin/env bash
# Generates every CRD in crds/ with controller-gen: ours from operator/api,
# and the Flux kinds from the Flux api modules the operator module imports
# (the same versions the Flux binaries in bin/ are built from). The
# VictoriaMetrics VMCluster CRD is copied from the VM operator's module.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cg="$root/bin/controller-gen"
out="$root/crds"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Our API group (skipped until the module has types).
if compgen -G "$root/operator/api/*/*_types.go" >/dev/null; then
  (cd "$root/operator/api" && "$cg" crd paths=./... output:crd:dir="$tmp/ops")
fi
# Flux: HelmRelease, and the source kinds (source-controller refuses to start
# unless all of them, Bucket and GitRepository included, are installed).
(cd "$root/operator" && "$cg" crd \
  paths=github.com/fluxcd/helm-controller/api/... \
  paths=github.com/fluxcd/source-controller/api/... \
  output:crd:dir="$tmp/flux")

# VictoriaMetrics: only the VMCluster CRD (ops-operator patches VMClusters
# and watches their vmstorage rollout; the VM operator owns the rest). The
# module ships every CRD in one multi-document file; keep the vmclusters
# document of the variant its overlay installs (descriptions stripped).
vm_operator=github.com/VictoriaMetrics/operator@v0.74.1
vm_dir=$(cd "$tmp" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$vm_operator" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
vm_crds="$vm_dir/config/crd/overlay/crd.descriptionless.yaml"
mkdir -p "$tmp/vm"
awk -v want="  name: vmclusters.operator.victoriametrics.com" '
  function flush() { if (hit) printf "%s", doc; doc = ""; hit = 0 }
  $0 == "---" { flush(); next }
  { doc = doc $0 "\n"; if ($0 == want) hit = 1 }
  END { flush() }
' "$vm_crds" >"$tmp/vm/operator.victoriametrics.com_vmclusters.yaml"
if ! grep -q '^kind: CustomResourceDefinition$' "$tmp/vm/operator.victoriametrics.com_vmclusters.yaml"; then
  echo "no VMCluster CRD in $vm_crds" >&2
  exit 1
fi

# The vm-operator chart ships every CRD of the operator (the variant without
# descriptions, one file per CRD), from the same module version the
# hack/tools/vm-operator binary is built from.
vm_tools_version=$(sed -n 's/^[[:space:]]*github.com\/VictoriaMetrics\/operator v\(.*\)$/v\1/p' "$root/hack/tools/vm-operator/go.mod")
if [[ "github.com/VictoriaMetrics/operator@$vm_tools_version" != "$vm_operator" ]]; then
  echo "hack/tools/vm-operator builds $vm_tools_version, this script reads $vm_operator: keep them equal" >&2
  exit 1
fi
vm_chart_crds="$root/deploy/charts/vm-operator/crds"
mkdir -p "$vm_chart_crds"
rm -f "$vm_chart_crds"/*.yaml
awk -v dir="$vm_chart_crds" '
  function flush() {
    if (name != "" && doc ~ /kind: CustomResourceDefinition/) printf "%s", doc > (dir "/" name ".yaml")
    doc = ""; name = ""
  }
  $0 == "---" { flush(); next }
  { doc = doc $0 "\n" }
  /^  name: [a-z0-9.]+$/ && name == "" { name = $2 }
  END { flush() }
' "$vm_crds"
if [[ $(ls "$vm_chart_crds" | wc -l) -lt 2 ]]; then
  echo "no CRDs written to $vm_chart_crds from $vm_crds" >&2
  exit 1
fi

mkdir -p "$out"
rm -f "$out"/*.yaml
cp "$tmp"/*/*.yaml "$out"/

# The ops-server chart ships our CRDs and the Flux kinds, copied from crds/
# (not the VMCluster CRD: it belongs to the VictoriaMetrics operator, which
# must be installed on its own).
chart_crds="$root/deploy/charts/ops-server/crds"
mkdir -p "$chart_crds"
rm -f "$chart_crds"/*.yaml
cp "$out"/ops.observability.tidbcloud.com_*.yaml \
  "$out"/helm.toolkit.fluxcd.io_*.yaml \
  "$out"/source.toolkit.fluxcd.io_*.yaml "$chart_crds"/
