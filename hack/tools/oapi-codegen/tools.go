//go:build tools

// Package tools pins oapi-codegen for hack/tools/build.sh.
package tools

import _ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
