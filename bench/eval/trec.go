package eval

import (
	"cmp"
	"slices"
)

// TrecOrder returns the ids of items in the order trec_eval (and so
// pytrec_eval and BEIR) evaluates a run: by score descending, ties by id
// descending (strcmp). An index's own tie order (insertion order) would
// otherwise shift nDCG slightly on tied scores. items is not modified.
func TrecOrder[T any](items []T, id func(T) string, score func(T) float64) []string {
	s := slices.Clone(items)
	slices.SortStableFunc(s, func(a, b T) int {
		if c := cmp.Compare(score(b), score(a)); c != 0 {
			return c
		}
		return cmp.Compare(id(b), id(a))
	})
	ids := make([]string, len(s))
	for i := range s {
		ids[i] = id(s[i])
	}
	return ids
}
