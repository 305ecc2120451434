package dense

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hybrank/hybrank/simd"
)

// graph is an HNSW graph (Malkov & Yashunin, arXiv:1603.09320) over the
// index's nums, using dot-product similarity of unit vectors (higher is
// closer), together with the vector slabs it routes over.
//
// Storage is flat: each neighbour list is a count followed by its slots,
// layer-0 lists in one array (1+m0 words per num), upper layers, held by
// about 1/M of the nodes, in groups of 1+m words (a node of level L owns L
// consecutive groups, the first at upOff[num]−1).
//
// Concurrency: one writer (Index.mu) mutates the graph while any number of
// searches read it without a lock. A search works on a copy of the graph
// value taken when the view it belongs to was published (see View); that
// copy's slices end at its n, and the writer only ever appends beyond
// them or, for existing nodes, rewrites neighbour lists. The list arrays
// are therefore read and written with atomic loads and stores, slots
// before the count: a search may see a list half rewritten by a concurrent
// insert, which only changes its route (every slot below any count holds
// a valid num of that layer), and it skips any num at or above its own n —
// nodes the writer added after its view, whose vectors and levels it must
// not read. A count lives in the same array as its slots because the
// writer may reallocate an array (append) while a search reads the old
// one: the search then sees that list as it was, whole, never a new count
// over old slots.
// Everything else (levels, upOff, rows) is written once, before the view
// that first contains the num is published, and never changed.
type graph struct {
	m, m0 int     // max links per node on upper layers / layer 0
	ml    float64 // level multiplier (writer only)
	efc   int     // beam width while inserting (writer only)
	rng   *rand.Rand
	dim   int

	slabs   [][]float32 // vector rows, slabRows per slab, never moved
	level   []int8      // by num; -1: not in the graph
	links0  []uint32    // by num: count, m0 slots (atomic)
	upOff   []uint32    // by num: 0, or 1 + its first upper group
	upLinks []uint32    // by group: count, m slots (atomic)
	entry   uint32
	top     int // level of entry; -1 when empty
	size    int // nodes in the graph
	n       int // num slots: nums below n exist
}

func newHNSW(cfg Config) *graph {
	return &graph{
		m: cfg.M, m0: 2 * cfg.M, ml: cfg.Ml, efc: cfg.EfConstruction,
		rng: rand.New(rand.NewSource(cfg.Seed)),
		dim: cfg.Dim,
		top: -1,
	}
}

// vec returns num's row; num < n.
func (g *graph) vec(num uint32) []float32 {
	s, r, d := int(num/slabRows), int(num%slabRows), g.dim
	return g.slabs[s][r*d : (r+1)*d : (r+1)*d]
}

// cand is a node and its similarity to the current query.
type cand struct {
	num uint32
	sim float32
}

// visited is a generation-stamped visited set, reused across searches.
type visited struct {
	marks []uint16
	gen   uint16
	// frontier is searchLayer's candidate heap, kept with the visited set
	// so that a search (and every insert's several searches) reuses it.
	frontier []cand
}

// visitPool holds visited sets for every graph (they grow to the largest).
var visitPool sync.Pool // *visited

func (g *graph) getVisited() *visited {
	v, _ := visitPool.Get().(*visited)
	if v == nil {
		v = &visited{}
	}
	if len(v.marks) < g.n {
		v.marks = make([]uint16, g.n+g.n/4+64)
		v.gen = 0
	}
	v.gen++
	if v.gen == 0 { // wrapped: old marks could collide
		clear(v.marks)
		v.gen = 1
	}
	return v
}

func (v *visited) visit(n uint32) bool {
	if v.marks[n] == v.gen {
		return false
	}
	v.marks[n] = v.gen
	return true
}

// candHeap is a binary heap of cands; with max set the most similar is on
// top, otherwise the least similar.
type candHeap struct {
	s   []cand
	max bool
}

func (h *candHeap) less(i, j int) bool {
	if h.max {
		return h.s[i].sim > h.s[j].sim
	}
	return h.s[i].sim < h.s[j].sim
}

func (h *candHeap) push(c cand) {
	h.s = append(h.s, c)
	for i := len(h.s) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.s[i], h.s[p] = h.s[p], h.s[i]
		i = p
	}
}

func (h *candHeap) pop() cand {
	top := h.s[0]
	last := len(h.s) - 1
	h.s[0] = h.s[last]
	h.s = h.s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h.s) && h.less(l, m) {
			m = l
		}
		if r < len(h.s) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.s[i], h.s[m] = h.s[m], h.s[i]
		i = m
	}
	return top
}

// slots returns the array and the offset of num's neighbour list on layer
// l: the count at links[base], the slots after it.
func (g *graph) slots(n uint32, l int) (links []uint32, base int) {
	if l == 0 {
		return g.links0, int(n) * (g.m0 + 1)
	}
	grp := int(g.upOff[n]) - 1 + l - 1
	return g.upLinks, grp * (g.m + 1)
}

// neighbors returns a copy of num's neighbour list on layer l (for the
// writer, which needs a stable list while it rewrites others).
func (g *graph) neighbors(n uint32, l int) []uint32 {
	links, base := g.slots(n, l)
	out := make([]uint32, atomic.LoadUint32(&links[base]))
	for i := range out {
		out[i] = atomic.LoadUint32(&links[base+1+i])
	}
	return out
}

// setNeighbors replaces num's list on layer l: slots first, then the count,
// so a concurrent search sees old or new slots, never unwritten ones.
func (g *graph) setNeighbors(n uint32, l int, nb []uint32) {
	links, base := g.slots(n, l)
	for i, x := range nb {
		atomic.StoreUint32(&links[base+1+i], x)
	}
	atomic.StoreUint32(&links[base], uint32(len(nb)))
}

// searchLayer is the paper's SEARCH-LAYER: a best-first beam of width ef
// from the entry points eps on layer l. Every reachable node is a routing
// node, but only nodes accept admits (nil: all) enter the results, so a
// filtered search explores further instead of returning excluded nodes.
// Nodes at or above g.n (added after this copy of the graph) are skipped.
// The result is sorted best first.
func (g *graph) searchLayer(q []float32, eps []cand, ef, l int, accept func(uint32) bool) []cand {
	vis := g.getVisited()
	cands := candHeap{s: vis.frontier[:0], max: true}
	defer func() {
		vis.frontier = cands.s[:0]
		visitPool.Put(vis)
	}()
	res := candHeap{s: make([]cand, 0, ef+1)}
	for _, e := range eps {
		if !vis.visit(e.num) {
			continue
		}
		cands.push(e)
		if accept == nil || accept(e.num) {
			res.push(e)
			if len(res.s) > ef {
				res.pop()
			}
		}
	}
	limit := uint32(g.n)
	for len(cands.s) > 0 {
		c := cands.pop()
		if len(res.s) >= ef && c.sim < res.s[0].sim {
			break
		}
		links, base := g.slots(c.num, l)
		for i, k := base+1, base+1+int(atomic.LoadUint32(&links[base])); i < k; i++ {
			nb := atomic.LoadUint32(&links[i])
			if nb >= limit || !vis.visit(nb) {
				continue
			}
			s := simd.Dot(q, g.vec(nb))
			if len(res.s) < ef || s > res.s[0].sim {
				cands.push(cand{nb, s})
				if accept == nil || accept(nb) {
					res.push(cand{nb, s})
					if len(res.s) > ef {
						res.pop()
					}
				}
			}
		}
	}
	out := res.s
	slices.SortFunc(out, func(a, b cand) int {
		switch {
		case a.sim > b.sim:
			return -1
		case a.sim < b.sim:
			return 1
		}
		return int(a.num) - int(b.num)
	})
	return out
}

// search returns up to ef nodes accepted by accept nearest to q, best first.
func (g *graph) search(q []float32, ef int, accept func(uint32) bool) []cand {
	if g.top < 0 {
		return nil
	}
	ep := []cand{{g.entry, simd.Dot(q, g.vec(g.entry))}}
	for l := g.top; l > 0; l-- {
		ep = g.searchLayer(q, ep, 1, l, nil)
	}
	return g.searchLayer(q, ep, ef, 0, accept)
}

// selectNeighbors is the paper's heuristic (Algorithm 4 without extension):
// walking cs best first, keep a candidate only if it is closer to the base
// than to every candidate already kept, up to m. This keeps links pointing
// in diverse directions, which clustered data needs.
func (g *graph) selectNeighbors(cs []cand, m int) []uint32 {
	out := make([]uint32, 0, m)
	for _, c := range cs {
		if len(out) >= m {
			break
		}
		cv := g.vec(c.num)
		good := true
		for _, r := range out {
			if simd.Dot(cv, g.vec(r)) > c.sim {
				good = false
				break
			}
		}
		if good {
			out = append(out, c.num)
		}
	}
	return out
}

// grow makes room for nums below n, allocating vector slabs as needed.
// Appending never writes below the old lengths, which published copies of
// the graph may be reading.
func (g *graph) grow(n int) {
	for len(g.slabs)*slabRows < n {
		g.slabs = append(g.slabs, make([]float32, slabRows*g.dim))
	}
	for len(g.level) < n {
		g.level = append(g.level, -1)
		g.upOff = append(g.upOff, 0)
	}
	if need := n * (g.m0 + 1); len(g.links0) < need {
		g.links0 = append(g.links0, make([]uint32, need-len(g.links0))...)
	}
	g.n = max(g.n, n)
}

// setLevel records num's level and gives it its upper slot groups.
func (g *graph) setLevel(num uint32, lvl int) {
	g.level[num] = int8(lvl)
	if lvl > 0 {
		g.upOff[num] = uint32(len(g.upLinks)/(g.m+1)) + 1
		g.upLinks = append(g.upLinks, make([]uint32, lvl*(g.m+1))...)
	}
}

// insert adds num (below n, whose row is written) to the graph.
func (g *graph) insert(num uint32) {
	lvl := min(int(-math.Log(1-g.rng.Float64())*g.ml), 30)
	g.setLevel(num, lvl)
	g.size++
	if g.top < 0 {
		g.entry, g.top = num, lvl
		return
	}
	q := g.vec(num)
	ep := []cand{{g.entry, simd.Dot(q, g.vec(g.entry))}}
	for l := g.top; l > lvl; l-- {
		ep = g.searchLayer(q, ep, 1, l, nil)
	}
	for l := min(lvl, g.top); l >= 0; l-- {
		w := g.searchLayer(q, ep, g.efc, l, nil)
		nb := g.selectNeighbors(w, g.m)
		g.setNeighbors(num, l, nb)
		mmax := g.m
		if l == 0 {
			mmax = g.m0
		}
		for _, e := range nb {
			g.link(e, num, l, mmax)
		}
		ep = w
	}
	if lvl > g.top {
		g.entry, g.top = num, lvl
	}
}

// link adds the edge e→num on layer l, pruning e's links with the
// heuristic when they exceed mmax.
func (g *graph) link(e, num uint32, l, mmax int) {
	links, base := g.slots(e, l)
	if c := atomic.LoadUint32(&links[base]); int(c) < mmax {
		atomic.StoreUint32(&links[base+1+int(c)], num)
		atomic.StoreUint32(&links[base], c+1)
		return
	}
	cur := g.neighbors(e, l)
	ev := g.vec(e)
	cs := make([]cand, 0, len(cur)+1)
	for _, n := range append(cur, num) {
		cs = append(cs, cand{n, simd.Dot(ev, g.vec(n))})
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.sim > b.sim {
			return -1
		}
		if a.sim < b.sim {
			return 1
		}
		return 0
	})
	g.setNeighbors(e, l, g.selectNeighbors(cs, mmax))
}

// Graph file format (little endian):
//
//	magic "HRHNSW01" | u32 m | u32 n (num slots) | u32 entry | i32 top |
//	n × i8 level | n × u16 cnt0 | n·2m × u32 links0 |
//	for each num with level > 0, ascending, for l in 1..level:
//	u16 count | count × u32
const graphMagic = "HRHNSW01"

// writeTo encodes the graph; the caller excludes the writer.
func (g *graph) writeTo(w io.Writer) error {
	le := binary.LittleEndian
	b := []byte(graphMagic)
	b = le.AppendUint32(b, uint32(g.m))
	b = le.AppendUint32(b, uint32(g.n))
	b = le.AppendUint32(b, g.entry)
	b = le.AppendUint32(b, uint32(int32(g.top)))
	for _, l := range g.level[:g.n] {
		b = append(b, byte(l))
	}
	for num := 0; num < g.n; num++ {
		b = le.AppendUint16(b, uint16(g.links0[num*(g.m0+1)]))
	}
	flush := func() error {
		_, err := w.Write(b)
		b = b[:0]
		return err
	}
	for num := 0; num < g.n; num++ {
		base := num * (g.m0 + 1)
		for _, x := range g.links0[base+1 : base+1+g.m0] {
			b = le.AppendUint32(b, x)
		}
		if len(b) > 1<<16 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	for num, l := range g.level[:g.n] {
		for i := 1; i <= int(l); i++ {
			nb := g.neighbors(uint32(num), i)
			b = le.AppendUint16(b, uint16(len(nb)))
			for _, x := range nb {
				b = le.AppendUint32(b, x)
			}
		}
		if len(b) > 1<<16 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

var errGraph = errors.New("malformed graph")

// readGraph decodes writeTo's format over slabs and checks every link.
func readGraph(b []byte, cfg Config, slabs [][]float32) (*graph, error) {
	le := binary.LittleEndian
	g := newHNSW(cfg)
	if len(b) < len(graphMagic)+16 || string(b[:len(graphMagic)]) != graphMagic {
		return nil, fmt.Errorf("%w: bad header", errGraph)
	}
	b = b[len(graphMagic):]
	if int(le.Uint32(b)) != g.m {
		return nil, fmt.Errorf("%w: M %d, config says %d", errGraph, le.Uint32(b), g.m)
	}
	n := int(le.Uint32(b[4:]))
	g.entry = le.Uint32(b[8:])
	g.top = int(int32(le.Uint32(b[12:])))
	b = b[16:]
	if need := n + 2*n + 4*n*g.m0; len(b) < need {
		return nil, fmt.Errorf("%w: truncated", errGraph)
	}
	if len(slabs)*slabRows < n {
		return nil, fmt.Errorf("%w: %d nums, %d vector rows", errGraph, n, len(slabs)*slabRows)
	}
	g.slabs = slabs
	g.grow(n)
	for i := 0; i < n; i++ {
		g.level[i] = int8(b[i])
		if g.level[i] >= 0 {
			g.size++
		}
	}
	b = b[n:]
	for i := 0; i < n; i++ {
		c := le.Uint16(b[2*i:])
		if int(c) > g.m0 {
			return nil, fmt.Errorf("%w: node %d has %d links", errGraph, i, c)
		}
		g.links0[i*(g.m0+1)] = uint32(c)
	}
	b = b[2*n:]
	for i := 0; i < n; i++ {
		for j := 0; j < g.m0; j++ {
			g.links0[i*(g.m0+1)+1+j] = le.Uint32(b[4*(i*g.m0+j):])
		}
	}
	b = b[4*n*g.m0:]
	for num, l := range g.level {
		if l <= 0 {
			continue
		}
		g.setLevel(uint32(num), int(l))
		for i := 1; i <= int(l); i++ {
			if len(b) < 2 {
				return nil, fmt.Errorf("%w: truncated", errGraph)
			}
			c := int(le.Uint16(b))
			b = b[2:]
			if c > g.m || len(b) < 4*c {
				return nil, fmt.Errorf("%w: node %d layer %d", errGraph, num, i)
			}
			nb := make([]uint32, c)
			for j := range nb {
				nb[j] = le.Uint32(b[4*j:])
			}
			b = b[4*c:]
			g.setNeighbors(uint32(num), i, nb)
		}
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errGraph, len(b))
	}
	// Every link must point at a node present on that layer.
	for num, l := range g.level {
		for i := 0; i <= int(l); i++ {
			for _, x := range g.neighbors(uint32(num), i) {
				if int(x) >= n || int(g.level[x]) < i {
					return nil, fmt.Errorf("%w: node %d links to %d on layer %d", errGraph, num, x, i)
				}
			}
		}
	}
	if g.top >= 0 && (int(g.entry) >= n || int(g.level[g.entry]) != g.top) || g.top < -1 || (g.top == -1) != (g.size == 0) {
		return nil, fmt.Errorf("%w: bad entry point", errGraph)
	}
	return g, nil
}
