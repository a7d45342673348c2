#!/usr/bin/env bash
# The test groups of hack/test-groups.txt.
#
#   hack/test-groups.sh packages <group>...   the packages of the groups, as ./dir
#   hack/test-groups.sh check                 every package with tests is in
#                                             exactly one group, none lighter
#                                             than what its tests link
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
list="$root/hack/test-groups.txt"
module_pkgs=(./operator/api/... ./operator/... ./apiserver/... ./e2e/...)
prefix=github.com/tidbcloud/ops-server/

listed() { grep -v -e '^#' -e '^[[:space:]]*$' "$list"; }

case "${1:-}" in
packages)
  shift
  [ $# -gt 0 ] || { echo "usage: $0 packages <group>..." >&2; exit 2; }
  for g in "$@"; do
    case "$g" in unit|integration|e2e) ;; *) echo "unknown test group $g (unit, integration, e2e)" >&2; exit 2 ;; esac
    listed | awk -v g="$g" '$1 == g { print "./" $2 }'
  done
  ;;
check)
  cd "$root"
  # The lightest group each package's test binary allows.
  declare -A need=()
  while read -r pkg deps; do
    pkg=${pkg%.test}
    pkg=${pkg#"$prefix"}
    g=unit
    case " $deps " in
      *" ${prefix}e2e/stack "*) g=e2e ;;
      *" ${prefix}operator/testenv "*) g=integration ;;
    esac
    need[$pkg]=$g
  done < <(go list -test -f '{{if .ForTest}}{{else if eq .Name "main"}}{{if gt (len .Deps) 0}}{{.ImportPath}} {{join .Deps " "}}{{end}}{{end}}' "${module_pkgs[@]}" | grep '\.test ')
  rank() { case "$1" in unit) echo 0 ;; integration) echo 1 ;; e2e) echo 2 ;; *) echo -1 ;; esac; }
  declare -A seen=()
  bad=0
  while read -r g pkg; do
    if [ "$(rank "$g")" -lt 0 ]; then echo "hack/test-groups.txt: $pkg: unknown group $g" >&2; bad=1; continue; fi
    if [ -n "${seen[$pkg]+x}" ]; then echo "hack/test-groups.txt: $pkg is listed twice" >&2; bad=1; fi
    seen[$pkg]=$g
    if [ -z "${need[$pkg]+x}" ]; then echo "hack/test-groups.txt: $pkg has no tests (or does not exist): remove it" >&2; bad=1; continue; fi
    if [ "$(rank "$g")" -lt "$(rank "${need[$pkg]}")" ]; then
      echo "hack/test-groups.txt: $pkg is in group $g but its tests link $( [ "${need[$pkg]}" = e2e ] && echo e2e/stack || echo operator/testenv ): put it in ${need[$pkg]}" >&2; bad=1
    fi
  done < <(listed)
  for pkg in "${!need[@]}"; do
    if [ -z "${seen[$pkg]+x}" ]; then echo "hack/test-groups.txt: $pkg has tests but no group: add \"${need[$pkg]} $pkg\" (or a heavier group)" >&2; bad=1; fi
  done
  exit $bad
  ;;
*)
  echo "usage: $0 packages <group>... | check" >&2
  exit 2
  ;;
esac
