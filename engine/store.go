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

// The document store is a two-level table of shards: storeDirs
// directories of storeLeaves shards each, a shard a map. A commit copies
// the directory table, each directory it touches and each shard it
// touches, so a commit of k documents into a store of n copies about
// k·n/storeShards entries (bounded by n) plus at most storeDirs small
// tables: a batch of 500 into 100K documents copies about 12K entries, a
// single document about 25 (with one level of 256 shards, the batch copied
// nearly the whole store on every commit).
const (
	storeDirs   = 64
	storeLeaves = 64
	storeShards = storeDirs * storeLeaves
)

// storeDir is one directory of shards (nil: empty shard).
type storeDir [storeLeaves]map[string][]*record

// store maps (tenant, ID) to records. Shards are chosen by ID alone and
// map an ID to its records in every tenant, sorted by tenant (usually
// one), so that replaying an old log record that deletes an ID in every
// tenant (see logRecord) finds the ID's tenants without a scan. A store
// value is immutable once published in a state: writes go through a
// storeWriter, which copies the tables, shards and per-ID slices it
// changes. The store owns the filter index of its records' numbers.
type store struct {
	dirs    []*storeDir // storeDirs entries (nil: empty directory), or nil when the store is empty
	n       int         // records
	filters filterIndex // the records' numbers by tenant and metadata
	maxNum  uint32      // the largest record number ever stored here (0: none)
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
	if s.dirs == nil {
		return nil
	}
	i := shardOf(id)
	if d := s.dirs[i/storeLeaves]; d != nil {
		return d[i%storeLeaves][id]
	}
	return nil
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
	for _, d := range s.dirs {
		if d == nil {
			continue
		}
		for _, sh := range d {
			for id := range sh {
				ids = append(ids, id)
			}
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
	s          store
	dirOwned   [storeDirs]bool          // directories already copied for this writer
	shardOwned [storeShards / 64]uint64 // shards already copied, a bit each
	filters    filterWriter
}

func (s store) writer() *storeWriter {
	w := &storeWriter{s: s, filters: filterWriter{f: s.filters}}
	if s.dirs == nil {
		w.s.dirs = make([]*storeDir, storeDirs)
	} else {
		w.s.dirs = slices.Clone(s.dirs)
	}
	return w
}

// shard returns the writable copy of id's shard. Its slices are still
// shared with the published store: replace them, never edit them.
func (w *storeWriter) shard(id string) map[string][]*record {
	i := shardOf(id)
	di := i / storeLeaves
	if !w.dirOwned[di] {
		d := new(storeDir)
		if old := w.s.dirs[di]; old != nil {
			*d = *old
		}
		w.s.dirs[di], w.dirOwned[di] = d, true
	}
	d := w.s.dirs[di]
	if bit := uint64(1) << (i % 64); w.shardOwned[i/64]&bit == 0 {
		d[i%storeLeaves] = maps.Clone(d[i%storeLeaves])
		if d[i%storeLeaves] == nil {
			d[i%storeLeaves] = map[string][]*record{}
		}
		w.shardOwned[i/64] |= bit
	}
	return d[i%storeLeaves]
}

// put stores r under (its tenant, its ID) and returns the record it
// replaced, or nil.
func (w *storeWriter) put(r *record) *record {
	sh := w.shard(r.doc.ID)
	rs := sh[r.doc.ID]
	i, found := tenantIndex(rs, r.doc.Tenant)
	w.s.maxNum = max(w.s.maxNum, r.num)
	if found {
		old := rs[i]
		sh[r.doc.ID] = slices.Concat(rs[:i], []*record{r}, rs[i+1:])
		w.filters.remove(old)
		w.filters.add(r)
		return old
	}
	sh[r.doc.ID] = slices.Insert(slices.Clone(rs), i, r)
	w.s.n++
	w.filters.add(r)
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
	w.filters.remove(old)
	return old
}

// done returns the new store; the writer must not be used afterwards.
func (w *storeWriter) done() store {
	w.s.filters = w.filters.done()
	return w.s
}
