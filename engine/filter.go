package engine

import (
	"maps"

	"github.com/RoaringBitmap/roaring/v2"
)

// filterIndex is the engine's one filter index: the document numbers
// (record.num) of each tenant and of each metadata key=value pair, as
// roaring bitmaps. A search turns its tenant and filter into an allow-list
// of document numbers (allow) and hands it to the postings and dense
// indexes, which know documents by those numbers (their Ref) and nothing
// of tenants or metadata. Part of a store: immutable once published, built
// copy-on-write by a filterWriter.
type filterIndex struct {
	tenants map[string]*roaring.Bitmap
	meta    map[string]map[string]*roaring.Bitmap // key → value → numbers
}

// allow returns the allow-list of tenant's documents whose metadata holds
// every pair of filter: nil when that is every stored document (tenant is
// the only one and filter is empty), which the indexes search at no cost;
// an empty bitmap when no document matches. The result is shared with the
// store or owned by the caller: read it, never change it.
func (f *filterIndex) allow(tenant string, filter map[string]string) *roaring.Bitmap {
	tb := f.tenants[tenant]
	if tb == nil {
		return roaring.New()
	}
	if len(filter) == 0 {
		if len(f.tenants) == 1 {
			return nil
		}
		return tb
	}
	parts := make([]*roaring.Bitmap, 1, 1+len(filter))
	parts[0] = tb
	for k, v := range filter {
		bm := f.meta[k][v]
		if bm == nil {
			return roaring.New()
		}
		parts = append(parts, bm)
	}
	return roaring.FastAnd(parts...)
}

// filterWriter builds the next filterIndex from a published one: each map
// and bitmap it changes is copied on first write. Bitmaps are cloned
// copy-on-write (sharing the containers a commit does not change), as the
// postings index does with its term bitmaps: the clone marks containers
// shared in the published bitmap's flags, which searches never read.
type filterWriter struct {
	f         filterIndex
	mapsOwned bool
	keysOwned map[string]bool    // meta value maps copied
	bmsOwned  map[[3]string]bool // bitmaps copied: {"t", tenant, ""} or {"m", key, value}
}

func (w *filterWriter) own() {
	if w.mapsOwned {
		return
	}
	w.f.tenants, w.f.meta = maps.Clone(w.f.tenants), maps.Clone(w.f.meta)
	if w.f.tenants == nil {
		w.f.tenants = map[string]*roaring.Bitmap{}
	}
	if w.f.meta == nil {
		w.f.meta = map[string]map[string]*roaring.Bitmap{}
	}
	w.keysOwned, w.bmsOwned = map[string]bool{}, map[[3]string]bool{}
	w.mapsOwned = true
}

// bitmap returns the writable copy of the bitmap id names in m, creating
// it if absent.
func (w *filterWriter) bitmap(m map[string]*roaring.Bitmap, key string, id [3]string) *roaring.Bitmap {
	bm := m[key]
	if w.bmsOwned[id] {
		return bm
	}
	if bm == nil {
		bm = roaring.New()
	} else {
		bm = bm.Clone()
	}
	bm.SetCopyOnWrite(true)
	m[key], w.bmsOwned[id] = bm, true
	return bm
}

func (w *filterWriter) tenant(t string) *roaring.Bitmap {
	w.own()
	return w.bitmap(w.f.tenants, t, [3]string{"t", t, ""})
}

func (w *filterWriter) metaValue(k, v string) *roaring.Bitmap {
	w.own()
	if !w.keysOwned[k] {
		vals := maps.Clone(w.f.meta[k])
		if vals == nil {
			vals = map[string]*roaring.Bitmap{}
		}
		w.f.meta[k], w.keysOwned[k] = vals, true
	}
	return w.bitmap(w.f.meta[k], v, [3]string{"m", k, v})
}

// add indexes r's number under its tenant and metadata.
func (w *filterWriter) add(r *record) {
	w.tenant(r.doc.Tenant).Add(r.num)
	for k, v := range r.doc.Metadata {
		w.metaValue(k, v).Add(r.num)
	}
}

// remove undoes add(r).
func (w *filterWriter) remove(r *record) {
	w.tenant(r.doc.Tenant).Remove(r.num)
	for k, v := range r.doc.Metadata {
		w.metaValue(k, v).Remove(r.num)
	}
}

// done drops the bitmaps that emptied and returns the new index; the
// writer must not be used afterwards.
func (w *filterWriter) done() filterIndex {
	if !w.mapsOwned {
		return w.f
	}
	for id := range w.bmsOwned {
		switch id[0] {
		case "t":
			if w.f.tenants[id[1]].IsEmpty() {
				delete(w.f.tenants, id[1])
			}
		case "m":
			vals := w.f.meta[id[1]]
			if vals[id[2]].IsEmpty() {
				delete(vals, id[2])
				if len(vals) == 0 {
					delete(w.f.meta, id[1])
				}
			}
		}
	}
	return w.f
}
