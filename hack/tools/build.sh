#!/usr/bin/env bash
# Builds the pinned tool binaries into a per-user cache keyed by everything
# that decides their content, and links them into bin/.
#
#   hack/tools/build.sh [name...]     (no name: every tool)
#
# A binary is rebuilt only when its key changes: the tools module's go.mod and
# go.sum, the package, the ldflags and the Go version. The cache lives outside
# the clone (OPS_TOOLS_CACHE, default ${XDG_CACHE_HOME:-$HOME/.cache}/ops-server/tools)
# so a fresh clone on the same machine gets every binary in seconds.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${OPS_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ops-server/tools}
bin="$root/bin"
mkdir -p "$cache" "$bin"

kube_version=v1.37.2
kube_ldflags="-X k8s.io/component-base/version.gitVersion=${kube_version} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=${kube_version}"

vm_ldflags="-X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=v1.100.0-cluster"

# name | tools module (under hack/tools) | package | extra ldflags
tools=(
  "etcd|etcd|go.etcd.io/etcd/server/v3|"
  "kube-apiserver|kube|k8s.io/kubernetes/cmd/kube-apiserver|${kube_ldflags}"
  "controller-gen|controller-gen|sigs.k8s.io/controller-tools/cmd/controller-gen|"
  "source-controller|flux-source|github.com/fluxcd/source-controller|"
  "helm-controller|flux-helm|github.com/fluxcd/helm-controller|"
  "kube-controller-manager|kube|k8s.io/kubernetes/cmd/kube-controller-manager|${kube_ldflags}"
  "kube-scheduler|kube|k8s.io/kubernetes/cmd/kube-scheduler|${kube_ldflags}"
  "kubectl|kube|k8s.io/kubernetes/cmd/kubectl|${kube_ldflags}"
  "kwok|kwok|sigs.k8s.io/kwok/cmd/kwok|"
  "vm-operator|vm-operator|github.com/VictoriaMetrics/operator/cmd|"
  "vmstorage|victoriametrics|github.com/VictoriaMetrics/VictoriaMetrics/app/vmstorage|${vm_ldflags}"
  "vminsert|victoriametrics|github.com/VictoriaMetrics/VictoriaMetrics/app/vminsert|${vm_ldflags}"
  "vmselect|victoriametrics|github.com/VictoriaMetrics/VictoriaMetrics/app/vmselect|${vm_ldflags}"
  "vmbackup|victoriametrics|github.com/VictoriaMetrics/VictoriaMetrics/app/vmbackup|${vm_ldflags}"
  "vmrestore|victoriametrics|github.com/VictoriaMetrics/VictoriaMetrics/app/vmrestore|${vm_ldflags}"
  "vmagent|victoriametrics|github.com/VictoriaMetrics/VictoriaMetrics/app/vmagent|${vm_ldflags}"
)

want=("$@")
selected() {
  [ ${#want[@]} -eq 0 ] && return 0
  local w
  for w in "${want[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}

goversion=$(go env GOVERSION)
for entry in "${tools[@]}"; do
  IFS='|' read -r name mod pkg ldflags <<<"$entry"
  selected "$name" || continue
  dir="$root/hack/tools/$mod"
  key=$( { cat "$dir/go.mod" "$dir/go.sum"; echo "$pkg|$ldflags|$goversion"; } | sha256sum | cut -c1-16)
  out="$cache/$name-$key"
  if [ ! -x "$out" ]; then
    echo ">> building $name ($pkg) — cached afterwards in $out" >&2
    start=$(date +%s)
    tmp="$out.tmp.$$"
    (cd "$dir" && GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod \
      go build -trimpath -ldflags="-s -w $ldflags" -o "$tmp" "$pkg")
    mv -f "$tmp" "$out"
    echo ">> built $name in $(( $(date +%s) - start ))s" >&2
  fi
  ln -sfn "$out" "$bin/$name"
done
