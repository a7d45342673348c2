#!/usr/bin/env bash
# Renders the kustomize base (deploy/kustomize/base) from the Helm chart
# (deploy/charts/ops-server) with the Helm SDK; run by `make manifests`
# after hack/manifests.sh has refreshed the chart's CRDs.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
go run ./e2e/deploy/cmd/render-kustomize --root "$root"
