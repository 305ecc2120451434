package engine

import (
	"slices"
	"testing"
)

// TestFilterIndexAllow checks the allow-lists of the filter index: nil
// (everything) only when the tenant is the only one and there is no
// filter, exact numbers otherwise, empty when nothing matches, and a
// writer leaving the published index as it was.
func TestFilterIndexAllow(t *testing.T) {
	rec := func(num uint32, tenant, id string, meta map[string]string) *record {
		return &record{num: num, doc: Document{Tenant: tenant, ID: id, Metadata: meta}}
	}
	w := store{}.writer()
	w.put(rec(1, "", "a", map[string]string{"lang": "en"}))
	w.put(rec(2, "", "b", map[string]string{"lang": "fr", "v": "b\x00c"}))
	one := w.done()
	if got := one.filters.allow("", nil); got != nil {
		t.Fatalf("the only tenant, no filter: %v, want nil", got)
	}
	nums := func(s store, tenant string, filter map[string]string) []uint32 {
		bm := s.filters.allow(tenant, filter)
		if bm == nil {
			t.Fatalf("%q %v: nil allow-list", tenant, filter)
		}
		return bm.ToArray()
	}
	w = one.writer()
	w.put(rec(3, "acme", "a", map[string]string{"lang": "en"}))
	w.put(rec(2, "", "b", map[string]string{"lang": "en"})) // replaced: fr and v gone
	w.del("", "a")
	two := w.done()
	for _, tc := range []struct {
		s      store
		tenant string
		filter map[string]string
		want   []uint32
	}{
		{one, "", map[string]string{"lang": "en"}, []uint32{1}},
		{one, "", map[string]string{"v": "b\x00c"}, []uint32{2}},
		{one, "", map[string]string{"v": "b"}, nil},
		{one, "", map[string]string{"lang": "en", "v": "b\x00c"}, nil},
		{one, "acme", nil, nil},
		{two, "", nil, []uint32{2}},
		{two, "", map[string]string{"lang": "en"}, []uint32{2}},
		{two, "", map[string]string{"lang": "fr"}, nil},
		{two, "acme", nil, []uint32{3}},
		{two, "acme", map[string]string{"lang": "en"}, []uint32{3}},
		{two, "nobody", nil, nil},
	} {
		if got := nums(tc.s, tc.tenant, tc.filter); !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
			t.Errorf("%q %v: %v, want %v", tc.tenant, tc.filter, got, tc.want)
		}
	}
	if _, ok := two.filters.meta["v"]; ok {
		t.Error("the emptied key v keeps a value map")
	}
	if got := one.filters.allow("", nil); got != nil || one.filters.tenants["acme"] != nil {
		t.Error("the writer changed the published filter index")
	}
}
