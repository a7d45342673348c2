#!/usr/bin/env bash
# The API reference viewer ops-apiserver serves at /docs: Redoc's standalone
# bundle, vendored into apiserver/internal/docspage/redoc/ and embedded in
# the binary (go:embed), so the page loads nothing from the internet.
#
#   hack/docsviewer/update.sh           fetch the pinned release with npm,
#                                       check its integrity, copy the bundle
#   hack/docsviewer/update.sh --check   the same, but only compare with the
#                                       vendored files (exit 1 on a difference)
#
# To bump: set VERSION, set INTEGRITY to the release's sha512
# (`npm view redoc@<version> dist.integrity`), run this script, update
# BUNDLE_SHA256 to what it prints, and look at the page (go test
# ./apiserver/test/docspage/ makes a screenshot).
set -euo pipefail

VERSION=2.5.1
# dist.integrity of the npm package redoc@$VERSION (sha512 of the tarball).
INTEGRITY=sha512-LmqA+4A3CmhTllGG197F0arUpmChukAj9klfSdxNRemT9Hr07xXr7OGKu4PHzBs359sgrJ+4JwmOlM7nxLPGMg==
# sha256 of bundles/redoc.standalone.js of that tarball; the docspage unit
# test checks the embedded file against it.
BUNDLE_SHA256=2d8d13e94b5a21011cc6f8260d87ca475d0f6f2faed16dd12e7394dfa3bb05b8

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dest="$root/apiserver/internal/docspage/redoc"
check=false
case "${1:-}" in
  --check) check=true ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

command -v npm >/dev/null || { echo "npm is needed (Debian: apt-get install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# npm pack downloads the release tarball from the configured registry.
tarball=$(cd "$tmp" && npm pack --silent "redoc@$VERSION")
got="sha512-$(openssl dgst -sha512 -binary "$tmp/$tarball" | base64 -w0)"
if [ "$got" != "$INTEGRITY" ]; then
  echo "redoc@$VERSION: tarball integrity $got, want $INTEGRITY" >&2
  exit 1
fi
tar -xzf "$tmp/$tarball" -C "$tmp" package/LICENSE package/bundles/redoc.standalone.js package/bundles/redoc.standalone.js.LICENSE.txt
sum=$(sha256sum "$tmp/package/bundles/redoc.standalone.js" | cut -d' ' -f1)
if [ "$sum" != "$BUNDLE_SHA256" ]; then
  echo "redoc@$VERSION: redoc.standalone.js has sha256 $sum; set BUNDLE_SHA256=$sum in $0" >&2
  exit 1
fi

files=(LICENSE bundles/redoc.standalone.js bundles/redoc.standalone.js.LICENSE.txt)
if $check; then
  for f in "${files[@]}"; do
    cmp -s "$tmp/package/$f" "$dest/$(basename "$f")" || { echo "$dest/$(basename "$f") differs from redoc@$VERSION's $f: run $0" >&2; exit 1; }
  done
  echo "redoc@$VERSION: the vendored files are the release's"
  exit 0
fi
mkdir -p "$dest"
for f in "${files[@]}"; do
  cp "$tmp/package/$f" "$dest/$(basename "$f")"
done
echo "redoc@$VERSION ($INTEGRITY) copied into $dest"
