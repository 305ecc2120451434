package engine

import (
	"maps"
	"slices"
)

// storeShards is the number of shards of the document store. A commit
// copies the shard table (this many map headers) and every shard it
// touches, so a small commit into a large store copies about
// documents/storeShards entries, not the whole store.
const storeShards = 256

// store maps document IDs to records. A store value is immutable once
// published in a state: writes go through a storeWriter, which copies the
// shards it touches.
type store struct {
	shards  []map[string]*record // storeShards entries (nil: empty shard), or nil when the store is empty
	n       int                  // records
	tenants map[string]int       // records per tenant (no zero counts)
}

// shardOf hashes an ID to its shard (FNV-1a: cheap and stable).
func shardOf(id string) int {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int(h % storeShards)
}

// get returns the record with the given ID, or nil.
func (s *store) get(id string) *record {
	if s.shards == nil {
		return nil
	}
	return s.shards[shardOf(id)][id]
}

// ids returns every ID, sorted.
func (s *store) ids() []string {
	out := make([]string, 0, s.n)
	for _, sh := range s.shards {
		for id := range sh {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// storeWriter builds the next store from a published one.
type storeWriter struct {
	s            store
	owned        []bool // by shard: already copied for this writer
	tenantsOwned bool
}

func (s store) writer() *storeWriter {
	w := &storeWriter{s: s, owned: make([]bool, storeShards)}
	if s.shards == nil {
		w.s.shards = make([]map[string]*record, storeShards)
	} else {
		w.s.shards = slices.Clone(s.shards)
	}
	return w
}

// shard returns the writable copy of id's shard.
func (w *storeWriter) shard(id string) map[string]*record {
	i := shardOf(id)
	if !w.owned[i] {
		w.s.shards[i] = maps.Clone(w.s.shards[i])
		if w.s.shards[i] == nil {
			w.s.shards[i] = map[string]*record{}
		}
		w.owned[i] = true
	}
	return w.s.shards[i]
}

// count adds d to tenant's record count.
func (w *storeWriter) count(tenant string, d int) {
	if !w.tenantsOwned {
		w.s.tenants, w.tenantsOwned = maps.Clone(w.s.tenants), true
		if w.s.tenants == nil {
			w.s.tenants = map[string]int{}
		}
	}
	if n := w.s.tenants[tenant] + d; n > 0 {
		w.s.tenants[tenant] = n
	} else {
		delete(w.s.tenants, tenant)
	}
}

// put stores r under its ID and returns the record it replaced, or nil.
func (w *storeWriter) put(r *record) *record {
	sh := w.shard(r.doc.ID)
	old := sh[r.doc.ID]
	if old == nil {
		w.s.n++
	} else {
		w.count(old.doc.Tenant, -1)
	}
	w.count(r.doc.Tenant, 1)
	sh[r.doc.ID] = r
	return old
}

// del removes id and returns its record, or nil.
func (w *storeWriter) del(id string) *record {
	if w.s.shards[shardOf(id)][id] == nil {
		return nil
	}
	sh := w.shard(id)
	old := sh[id]
	delete(sh, id)
	w.s.n--
	w.count(old.doc.Tenant, -1)
	return old
}

// get reads through the writer's current contents.
func (w *storeWriter) get(id string) *record { return w.s.get(id) }

// done returns the new store; the writer must not be used afterwards.
func (w *storeWriter) done() store { return w.s }
