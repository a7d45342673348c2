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
#
# Binaries you already have are used instead of building (see
# CONTRIBUTING.md, "Tool binaries"):
#   - a file (not a link) in $OPS_BIN_DIR (default bin/) is yours: it is
#     kept as it is;
#   - etcd, kube-apiserver and kubectl from $KUBEBUILDER_ASSETS, and etcd and
#     the Kubernetes binaries from PATH, when their --version is the pinned
#     one, are linked instead of built (OPS_TOOLS_FROM_PATH=0 turns the PATH
#     look-up off).
#
# Independent tools build in parallel, OPS_TOOLS_JOBS at a time (default:
# half the cores, at least 1; linking kube-apiserver takes GBs of memory).
# The last line is a summary with each tool's time, or where it came from.
#
# OPS_TOOLS_TABLE replaces the table below with a file of the same lines
# (name|module|package|ldflags), modules under OPS_TOOLS_MODULES (default
# hack/tools); the tests of this script use it with a tiny module.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${OPS_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ops-server/tools}
bin=${OPS_BIN_DIR:-$root/bin}
modules=${OPS_TOOLS_MODULES:-$root/hack/tools}
mkdir -p "$cache" "$bin"

kube_version=v1.37.2
kube_ldflags="-X k8s.io/component-base/version.gitVersion=${kube_version} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=${kube_version}"

vm_ldflags="-X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=v1.100.0-cluster"

# name | tools module (under hack/tools) | package | extra ldflags
tools=(
  "etcd|etcd|go.etcd.io/etcd/server/v3|"
  "kube-apiserver|kube|k8s.io/kubernetes/cmd/kube-apiserver|${kube_ldflags}"
  "controller-gen|controller-gen|sigs.k8s.io/controller-tools/cmd/controller-gen|"
  "oapi-codegen|oapi-codegen|github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen|"
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
if [ -n "${OPS_TOOLS_TABLE:-}" ]; then
  mapfile -t tools < <(grep -v -e '^#' -e '^$' "$OPS_TOOLS_TABLE")
fi

want=("$@")
for w in "${want[@]}"; do
  found=0
  for entry in "${tools[@]}"; do [ "${entry%%|*}" = "$w" ] && found=1; done
  [ $found = 1 ] || { echo "hack/tools/build.sh: unknown tool $w" >&2; exit 2; }
done
selected() {
  [ ${#want[@]} -eq 0 ] && return 0
  local w
  for w in "${want[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}

# pinned_version prints what `<name> --version` must say for a binary found
# outside the cache to be used, or nothing when such binaries are not
# checked (then the tool is always built).
pinned_version() {
  case "$1" in
    etcd) sed -n 's/^require go.etcd.io\/etcd\/server\/v3 v\([0-9.]*\)$/etcd Version: \1/p; s/^[[:space:]]*go.etcd.io\/etcd\/server\/v3 v\([0-9.]*\)$/etcd Version: \1/p' "$modules/etcd/go.mod" | head -1 ;;
    kube-apiserver|kube-controller-manager|kube-scheduler) echo "Kubernetes ${kube_version}" ;;
    kubectl) echo "Client Version: ${kube_version}" ;;
  esac
}

# version_of runs a binary's version command (bounded in time).
version_of() {
  local name=$1 path=$2
  if [ "$name" = kubectl ]; then
    timeout 10 "$path" version --client 2>/dev/null || true
  else
    timeout 10 "$path" --version 2>/dev/null || true
  fi
}

# existing prints the path of a binary of the pinned version found in
# $KUBEBUILDER_ASSETS or on PATH (never one of ours), or nothing.
existing() {
  local name=$1 pin candidates=() c real
  pin=$(pinned_version "$name")
  [ -n "$pin" ] || return 0
  case "$name" in
    etcd|kube-apiserver|kubectl) [ -n "${KUBEBUILDER_ASSETS:-}" ] && candidates+=("$KUBEBUILDER_ASSETS/$name") ;;
  esac
  if [ "${OPS_TOOLS_FROM_PATH:-1}" != 0 ] && c=$(command -v "$name" 2>/dev/null); then candidates+=("$c"); fi
  for c in "${candidates[@]}"; do
    [ -x "$c" ] || continue
    real=$(readlink -f "$c")
    case "$real" in "$cache"/*|"$bin"/*|"$root"/bin/*) continue ;; esac
    if version_of "$name" "$c" | grep -qxF "$pin"; then
      echo "$c"
      return 0
    fi
  done
}

# build_one builds (or finds) one tool and writes "name status" to $2.
build_one() {
  local entry=$1 result=$2 name mod pkg ldflags dir key out start tmp found
  IFS='|' read -r name mod pkg ldflags <<<"$entry"
  if [ -f "$bin/$name" ] && [ ! -L "$bin/$name" ]; then
    echo "$name yours" >"$result"
    return 0
  fi
  if found=$(existing "$name") && [ -n "$found" ]; then
    ln -sfn "$found" "$bin/$name"
    echo "$name found:$found" >"$result"
    return 0
  fi
  dir="$modules/$mod"
  key=$( { cat "$dir/go.mod" "$dir/go.sum"; echo "$pkg|$ldflags|$goversion"; } | sha256sum | cut -c1-16)
  out="$cache/$name-$key"
  if [ -x "$out" ]; then
    ln -sfn "$out" "$bin/$name"
    echo "$name cached" >"$result"
    return 0
  fi
  echo ">> building $name ($pkg) — cached afterwards in $out" >&2
  start=$(date +%s)
  tmp="$out.tmp.$$.$RANDOM"
  if ! (cd "$dir" && GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go build -trimpath -ldflags="-s -w $ldflags" -o "$tmp" "$pkg"); then
    rm -f "$tmp"
    echo "$name FAILED" >"$result"
    return 1
  fi
  mv -f "$tmp" "$out"
  ln -sfn "$out" "$bin/$name"
  echo ">> built $name in $(( $(date +%s) - start ))s" >&2
  echo "$name $(( $(date +%s) - start ))s" >"$result"
}

jobs=${OPS_TOOLS_JOBS:-$(( $(nproc 2>/dev/null || echo 2) / 2 ))}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
goversion=$(go env GOVERSION)
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# Tools of one module share its build cache: they build one after the
# other in one job, so that parallel jobs never compile the same packages
# twice; different modules build in parallel.
declare -A groups=()
order=()
for entry in "${tools[@]}"; do
  IFS='|' read -r name mod _ <<<"$entry"
  selected "$name" || continue
  [ -n "${groups[$mod]+x}" ] || order+=("$mod")
  groups[$mod]+="$entry"$'\n'
done

for mod in "${order[@]}"; do
  (
    while IFS= read -r entry; do
      [ -n "$entry" ] || continue
      build_one "$entry" "$results/${entry%%|*}" || exit 1
    done <<<"${groups[$mod]}"
  ) &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
done
wait

failed=0
summary=()
for entry in "${tools[@]}"; do
  name=${entry%%|*}
  selected "$name" || continue
  line=$(cat "$results/$name" 2>/dev/null || echo "$name not built")
  case "$line" in *" FAILED"|*" not built") failed=1 ;; esac
  summary+=("${line/ /: }")
done
if [ ${#summary[@]} -gt 0 ]; then
  (IFS=','; echo "tools (${jobs} at a time):${summary[*]/#/ }")
fi
exit $failed
