// Package tooling holds the tests of the repository's developer tooling:
// hack/tools/build.sh (tools built per need, in parallel, cached, existing
// binaries used). It has no code of its own.
package tooling
