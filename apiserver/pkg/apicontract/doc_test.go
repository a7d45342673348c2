package apicontract

import (
	"strings"
	"testing"
)

// TestDocumentLint loads the embedded document strictly with kin-openapi
// and applies the house rules of Lint: `make test` (the unit group) fails
// on an invalid or sloppy document.
func TestDocumentLint(t *testing.T) {
	doc, err := LoadDocument(Document())
	if err != nil {
		t.Fatalf("%v", err)
	}
	if problems := Lint(doc, Document()); len(problems) > 0 {
		t.Errorf("the OpenAPI document breaks %d house rules:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	if _, err := New(); err != nil {
		t.Errorf("New: %v", err)
	}
}
