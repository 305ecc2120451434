package engine

import (
	"fmt"
	"testing"
)

// TestStoreWriterLeavesPublishedStore checks copy-on-write at every level
// of the store: a writer that adds, replaces and deletes documents in the
// shards and directories of a published store leaves that store as it was.
func TestStoreWriterLeavesPublishedStore(t *testing.T) {
	var num uint32
	rec := func(tenant, id, text string) *record {
		num++
		return &record{doc: Document{Tenant: tenant, ID: id, Text: text}, num: num}
	}
	count := func(s store, tenant string) int {
		if bm := s.filters.tenants[tenant]; bm != nil {
			return int(bm.GetCardinality())
		}
		return 0
	}
	w := store{}.writer()
	for i := range 3 * storeShards {
		w.put(rec(fmt.Sprintf("t%d", i%3), fmt.Sprintf("d%d", i/3), "v1"))
	}
	pub := w.done()
	if pub.n != 3*storeShards {
		t.Fatalf("n = %d, want %d", pub.n, 3*storeShards)
	}
	w = pub.writer()
	for i := range storeShards {
		w.put(rec("t0", fmt.Sprintf("d%d", i), "v2"))   // replace
		w.del("t1", fmt.Sprintf("d%d", i))              // delete one tenant of an ID
		w.put(rec("t9", fmt.Sprintf("new%d", i), "v1")) // add
	}
	next := w.done()
	for i := range storeShards {
		id := fmt.Sprintf("d%d", i)
		if r := pub.get("t0", id); r == nil || r.doc.Text != "v1" {
			t.Fatalf("published %s/t0 = %v, want v1", id, r)
		}
		if pub.get("t1", id) == nil {
			t.Fatalf("published %s/t1 deleted by the writer", id)
		}
		if pub.get("t9", fmt.Sprintf("new%d", i)) != nil {
			t.Fatalf("writer's addition visible in the published store")
		}
		if r := next.get("t0", id); r == nil || r.doc.Text != "v2" {
			t.Fatalf("next %s/t0 = %v, want v2", id, r)
		}
		if next.get("t1", id) != nil || next.get("t9", fmt.Sprintf("new%d", i)) == nil {
			t.Fatalf("next store misses the writer's delete or add of %s", id)
		}
	}
	if pub.n != 3*storeShards || count(pub, "t0") != storeShards || count(pub, "t1") != storeShards || count(pub, "t9") != 0 {
		t.Fatalf("published counts changed: n %d, tenants %v", pub.n, pub.filters.tenants)
	}
	if want := 3*storeShards - storeShards + storeShards; next.n != want || count(next, "t0") != storeShards || count(next, "t1") != 0 || count(next, "t9") != storeShards {
		t.Fatalf("next counts: n %d (want %d), tenants %v", next.n, want, next.filters.tenants)
	}
	if _, ok := next.filters.tenants["t1"]; ok {
		t.Fatal("the emptied tenant t1 keeps a bitmap")
	}
	var seen int
	if err := next.each(func(*record) error { seen++; return nil }); err != nil || seen != next.n {
		t.Fatalf("each visited %d of %d (err %v)", seen, next.n, err)
	}
}
