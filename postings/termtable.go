package postings

// termTable maps term ids to posting lists. It is copy-on-write in fixed
// chunks: the table of the next snapshot copies the chunk index and the
// chunks a commit changes, not every entry (a small commit touches a few
// hundred of a vocabulary's tens of thousands of terms, and copying the
// whole table per commit was most of a small commit's cost). A table is
// immutable once published; writers use a termTableWriter.
type termTable struct {
	chunks []*termChunk
	n      int // term ids below n have a slot (nil: no postings)
}

const termChunkLen = 32

type termChunk [termChunkLen]*termPostings

// len is the number of term id slots.
func (t *termTable) len() int { return t.n }

// get returns the postings of tid, or nil.
func (t *termTable) get(tid uint32) *termPostings {
	if uint64(tid) >= uint64(t.n) {
		return nil
	}
	return t.chunks[tid/termChunkLen][tid%termChunkLen]
}

// all yields every slot's term id and postings (nil included) in id order.
func (t *termTable) all(yield func(int, *termPostings) bool) {
	for tid := 0; tid < t.n; tid++ {
		if !yield(tid, t.chunks[tid/termChunkLen][tid%termChunkLen]) {
			return
		}
	}
}

// append adds tp as the next term id's postings. Only for a table that is
// being built and not yet shared (loading, rebuilding).
func (t *termTable) append(tp *termPostings) {
	if t.n%termChunkLen == 0 {
		t.chunks = append(t.chunks, new(termChunk))
	}
	t.chunks[t.n/termChunkLen][t.n%termChunkLen] = tp
	t.n++
}

// termTableWriter builds the next table from a published one.
type termTableWriter struct {
	t     termTable
	owned map[int]bool // chunks copied for this writer
}

// writer starts the next table; terms is about how many entries it will
// set.
func (t *termTable) writer(terms int) *termTableWriter {
	return &termTableWriter{t: termTable{chunks: append([]*termChunk(nil), t.chunks...), n: t.n}, owned: make(map[int]bool, min(terms, len(t.chunks)))}
}

// get returns the postings of tid in the table being built, or nil.
func (w *termTableWriter) get(tid uint32) *termPostings { return w.t.get(tid) }

// set makes tp the postings of tid, adding slots up to tid as needed.
func (w *termTableWriter) set(tid uint32, tp *termPostings) {
	for int(tid) >= w.t.n {
		if w.t.n%termChunkLen == 0 {
			w.t.chunks = append(w.t.chunks, new(termChunk))
			w.owned[len(w.t.chunks)-1] = true
		}
		w.t.n++
	}
	c := int(tid / termChunkLen)
	if !w.owned[c] {
		cp := *w.t.chunks[c]
		w.t.chunks[c] = &cp
		w.owned[c] = true
	}
	w.t.chunks[c][tid%termChunkLen] = tp
}

// done returns the table; the writer must not be used afterwards.
func (w *termTableWriter) done() termTable { return w.t }
