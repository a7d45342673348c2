#!/usr/bin/env bash
# Generates every CRD in crds/ with controller-gen: ours from operator/api,
# and the Flux kinds from the Flux api modules the operator module imports
# (the same versions the Flux binaries in bin/ are built from).
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

mkdir -p "$out"
rm -f "$out"/*.yaml
cp "$tmp"/*/*.yaml "$out"/
