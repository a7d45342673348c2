package vmstorage

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestMergePatches(t *testing.T) {
	tests := []struct {
		name            string
		base, add, want map[string]any
	}{
		{"into nothing", nil, map[string]any{"a": 1.0}, map[string]any{"a": 1.0}},
		{"objects merge", map[string]any{"v": map[string]any{"x": 1.0}}, map[string]any{"v": map[string]any{"y": 2.0}},
			map[string]any{"v": map[string]any{"x": 1.0, "y": 2.0}}},
		{"a later value wins", map[string]any{"v": map[string]any{"x": 1.0}}, map[string]any{"v": map[string]any{"x": 3.0}},
			map[string]any{"v": map[string]any{"x": 3.0}}},
		{"lists are replaced", map[string]any{"l": []any{1.0, 2.0}}, map[string]any{"l": []any{3.0}}, map[string]any{"l": []any{3.0}}},
		{"null is kept (it deletes)", map[string]any{"v": map[string]any{"x": 1.0}}, map[string]any{"v": map[string]any{"x": nil}},
			map[string]any{"v": map[string]any{"x": nil}}},
		{"an object replaces a scalar", map[string]any{"v": 1.0}, map[string]any{"v": map[string]any{"x": 1.0}},
			map[string]any{"v": map[string]any{"x": 1.0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(mergePatches(tt.base, tt.add)).To(Equal(tt.want))
		})
	}
}
