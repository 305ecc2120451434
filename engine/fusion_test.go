package engine

import (
	"math"
	"slices"
	"testing"
)

func ids(cs []*candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.id
	}
	return out
}

func TestFuse(t *testing.T) {
	bm25 := []scored{{"a", 10}, {"b", 6}, {"c", 2}}
	dn := []scored{{"b", 0.9}, {"d", 0.5}, {"a", 0.1}}
	tests := []struct {
		name   string
		method Fusion
		alpha  float64
		order  []string
		scores map[string]float64
	}{
		{"rrf", FusionRRF, 0, []string{"b", "a", "d", "c"}, map[string]float64{
			"a": 1.0/61 + 1.0/63, "b": 1.0/62 + 1.0/61, "c": 1.0 / 63, "d": 1.0 / 62}},
		// bm25': a=1 b=.5 c=0; dense': b=1 d=.5 a=0.
		{"weighted 0.5", FusionWeighted, 0.5, []string{"b", "a", "d", "c"}, map[string]float64{
			"a": 0.5, "b": 0.75, "c": 0, "d": 0.25}},
		{"weighted 0.25", FusionWeighted, 0.25, []string{"a", "b", "d", "c"}, map[string]float64{
			"a": 0.75, "b": 0.625, "c": 0, "d": 0.125}},
		{"weighted 0 is bm25 order", FusionWeighted, 0, []string{"a", "b", "c", "d"}, map[string]float64{
			"a": 1, "b": 0.5, "c": 0, "d": 0}},
		{"weighted 1 is dense order", FusionWeighted, 1, []string{"b", "d", "a", "c"}, map[string]float64{
			"a": 0, "b": 1, "c": 0, "d": 0.5}},
		{"relative", FusionRelative, 0, []string{"b", "a", "d", "c"}, map[string]float64{
			"a": 1, "b": 1.5, "c": 0, "d": 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fuse(tt.method, bm25, dn, 60, tt.alpha)
			if !slices.Equal(ids(got), tt.order) {
				t.Fatalf("order %v, want %v", ids(got), tt.order)
			}
			for i, c := range got {
				if want := tt.scores[c.id]; math.Abs(c.fused-want) > 1e-12 {
					t.Errorf("%s fused %v, want %v", c.id, c.fused, want)
				}
				if c.fusedRank != i+1 {
					t.Errorf("%s fusedRank %d, want %d", c.id, c.fusedRank, i+1)
				}
			}
			a := got[slices.Index(ids(got), "a")]
			if a.bm25Rank != 1 || a.denseRank != 3 || a.bm25Score != 10 || a.denseScore != 0.1 {
				t.Errorf("provenance of a: %+v", *a)
			}
		})
	}
}

// TestFuseAlphaExtremesFollowLists checks on a larger random-ish case that
// alpha 0 reproduces the BM25 list and alpha 1 the dense list, as prefixes.
func TestFuseAlphaExtremesFollowLists(t *testing.T) {
	var bm25, dn []scored
	for i := 0; i < 50; i++ {
		bm25 = append(bm25, scored{string(rune('A'+i%26)) + string(rune('a'+i/26)), float64(100 - i*i%7 - i)})
		dn = append(dn, scored{string(rune('A'+(i*7)%26)) + string(rune('a'+(i*3)%2)), 1 - float64(i)/60})
	}
	dedupe := func(l []scored) []scored {
		seen := map[string]bool{}
		var out []scored
		for _, s := range l {
			if !seen[s.id] {
				seen[s.id] = true
				out = append(out, s)
			}
		}
		slices.SortStableFunc(out, func(a, b scored) int {
			switch {
			case a.score > b.score:
				return -1
			case a.score < b.score:
				return 1
			}
			return 0
		})
		return out
	}
	bm25, dn = dedupe(bm25), dedupe(dn)
	for _, tc := range []struct {
		name  string
		alpha float64
		list  []scored
	}{{"alpha0", 0, bm25}, {"alpha1", 1, dn}} {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(fuse(FusionWeighted, bm25, dn, 60, tc.alpha))
			// Equal scores in the list are ordered by list rank too, so the
			// prefix is the list itself.
			want := make([]string, len(tc.list))
			for i, s := range tc.list {
				want[i] = s.id
			}
			if !slices.Equal(got[:len(want)], want) {
				t.Fatalf("prefix %v\nwant   %v", got[:len(want)], want)
			}
		})
	}
}

func TestMinMax(t *testing.T) {
	tests := []struct {
		name string
		in   []scored
		want []float64
	}{
		{"empty", nil, []float64{}},
		{"single", []scored{{"a", 3}}, []float64{1}},
		{"equal", []scored{{"a", 2}, {"b", 2}}, []float64{1, 1}},
		{"spread", []scored{{"a", 4}, {"b", 3}, {"c", 0}}, []float64{1, 0.75, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := minMax(tt.in); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v want %v", got, tt.want)
			}
		})
	}
}
