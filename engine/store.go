package engine

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// docKey identifies a document: IDs are scoped by tenant.
type docKey struct {
	Tenant, ID string
}

// indexKey is the ID a document has in the postings and dense indexes,
// which know a flat ID space: the tenant, length-prefixed so that no two
// (tenant, ID) pairs share a key, then the ID. The documents of one tenant
// share the prefix, so the indexes' ties by ID order them by ID.
func indexKey(tenant, id string) string {
	return strconv.Itoa(len(tenant)) + ":" + tenant + id
}

// splitKey inverts indexKey; ok is false for a string indexKey did not
// make.
func splitKey(key string) (k docKey, ok bool) {
	i := strings.IndexByte(key, ':')
	if i < 0 {
		return docKey{}, false
	}
	n, err := strconv.Atoi(key[:i])
	if err != nil || n < 0 || i+1+n > len(key) {
		return docKey{}, false
	}
	rest := key[i+1:]
	return docKey{Tenant: rest[:n], ID: rest[n:]}, true
}

// storeShards is the number of shards of the document store. A commit
// copies the shard table (this many map headers) and every shard it
// touches, so a small commit into a large store copies about
// documents/storeShards entries, not the whole store.
const storeShards = 256

// store maps (tenant, ID) to records. Shards are chosen by ID alone and
// map an ID to its records in every tenant, sorted by tenant (usually
// one), so that replaying an old log record that deletes an ID in every
// tenant (see logRecord) finds the ID's tenants without a scan. A store
// value is immutable once published in a state: writes go through a
// storeWriter, which copies the shards and the per-ID slices it changes.
type store struct {
	shards  []map[string][]*record // storeShards entries (nil: empty shard), or nil when the store is empty
	n       int                    // records
	tenants map[string]int         // records per tenant (no zero counts)
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

// all returns id's records in every tenant, sorted by tenant; the slice
// belongs to the store.
func (s *store) all(id string) []*record {
	if s.shards == nil {
		return nil
	}
	return s.shards[shardOf(id)][id]
}

// get returns the record of (tenant, id), or nil.
func (s *store) get(tenant, id string) *record {
	rs := s.all(id)
	if i, ok := tenantIndex(rs, tenant); ok {
		return rs[i]
	}
	return nil
}

// getKey returns the record an index key names, or nil.
func (s *store) getKey(key string) *record {
	k, ok := splitKey(key)
	if !ok {
		return nil
	}
	return s.get(k.Tenant, k.ID)
}

// tenantIndex finds tenant in rs (sorted by tenant): its position, or
// where it would go.
func tenantIndex(rs []*record, tenant string) (int, bool) {
	return slices.BinarySearchFunc(rs, tenant, func(r *record, t string) int { return strings.Compare(r.doc.Tenant, t) })
}

// each calls f with every record in (ID, tenant) order.
func (s *store) each(f func(*record) error) error {
	ids := make([]string, 0, s.n)
	for _, sh := range s.shards {
		for id := range sh {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		for _, r := range s.all(id) {
			if err := f(r); err != nil {
				return err
			}
		}
	}
	return nil
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
		w.s.shards = make([]map[string][]*record, storeShards)
	} else {
		w.s.shards = slices.Clone(s.shards)
	}
	return w
}

// shard returns the writable copy of id's shard. Its slices are still
// shared with the published store: replace them, never edit them.
func (w *storeWriter) shard(id string) map[string][]*record {
	i := shardOf(id)
	if !w.owned[i] {
		w.s.shards[i] = maps.Clone(w.s.shards[i])
		if w.s.shards[i] == nil {
			w.s.shards[i] = map[string][]*record{}
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

// put stores r under (its tenant, its ID) and returns the record it
// replaced, or nil.
func (w *storeWriter) put(r *record) *record {
	sh := w.shard(r.doc.ID)
	rs := sh[r.doc.ID]
	i, found := tenantIndex(rs, r.doc.Tenant)
	if found {
		old := rs[i]
		sh[r.doc.ID] = slices.Concat(rs[:i], []*record{r}, rs[i+1:])
		return old
	}
	sh[r.doc.ID] = slices.Insert(slices.Clone(rs), i, r)
	w.s.n++
	w.count(r.doc.Tenant, 1)
	return nil
}

// del removes (tenant, id) and returns its record, or nil.
func (w *storeWriter) del(tenant, id string) *record {
	i, found := tenantIndex(w.s.all(id), tenant)
	if !found {
		return nil
	}
	sh := w.shard(id)
	rs := sh[id]
	old := rs[i]
	if len(rs) == 1 {
		delete(sh, id)
	} else {
		sh[id] = slices.Concat(rs[:i], rs[i+1:])
	}
	w.s.n--
	w.count(tenant, -1)
	return old
}

// done returns the new store; the writer must not be used afterwards.
func (w *storeWriter) done() store { return w.s }
