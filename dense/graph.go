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

	"github.com/hybrank/hybrank/simd"
)

// graph is an HNSW graph (Malkov & Yashunin, arXiv:1603.09320) over the
// index's nums, using dot-product similarity of unit vectors (higher is
// closer). Layer 0 links live in one flat array (m0 slots per num); upper
// layers, held by about 1/M of the nodes, in a map. Vectors are not owned:
// vec returns a num's row from the index's slabs.
//
// Not safe for concurrent use by itself: search may run concurrently with
// other searches (it only reads, plus a pooled visited set), insert needs
// exclusive access; Index's RWMutex provides both.
type graph struct {
	m, m0 int     // max links per node on upper layers / layer 0
	ml    float64 // level multiplier
	efc   int     // beam width while inserting
	rng   *rand.Rand
	vec   func(uint32) []float32

	level  []int8   // by num; -1: not in the graph
	cnt0   []uint16 // by num: used layer-0 slots
	links0 []uint32 // by num: m0 slots
	upper  map[uint32][][]uint32
	entry  uint32
	top    int // level of entry; -1 when empty
	size   int // nodes in the graph

	visitPool sync.Pool // *visited
}

func newHNSW(cfg Config, vec func(uint32) []float32) *graph {
	return &graph{
		m: cfg.M, m0: 2 * cfg.M, ml: cfg.Ml, efc: cfg.EfConstruction,
		rng:   rand.New(rand.NewSource(cfg.Seed)),
		vec:   vec,
		upper: make(map[uint32][][]uint32),
		top:   -1,
	}
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
}

func (g *graph) getVisited() *visited {
	v, _ := g.visitPool.Get().(*visited)
	if v == nil {
		v = &visited{}
	}
	if len(v.marks) < len(g.level) {
		v.marks = make([]uint16, len(g.level)+len(g.level)/4+64)
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

func (g *graph) neighbors(n uint32, l int) []uint32 {
	if l == 0 {
		o := int(n) * g.m0
		return g.links0[o : o+int(g.cnt0[n])]
	}
	return g.upper[n][l-1]
}

func (g *graph) setNeighbors(n uint32, l int, nb []uint32) {
	if l == 0 {
		o := int(n) * g.m0
		g.cnt0[n] = uint16(copy(g.links0[o:o+g.m0], nb))
		return
	}
	g.upper[n][l-1] = append(g.upper[n][l-1][:0], nb...)
}

// searchLayer is the paper's SEARCH-LAYER: a best-first beam of width ef
// from the entry points eps on layer l. Every reachable node is a routing
// node, but only nodes accept admits (nil: all) enter the results, so a
// filtered search explores further instead of returning excluded nodes.
// The result is sorted best first.
func (g *graph) searchLayer(q []float32, eps []cand, ef, l int, accept func(uint32) bool) []cand {
	vis := g.getVisited()
	defer g.visitPool.Put(vis)
	cands := candHeap{s: make([]cand, 0, ef*2), max: true}
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
	for len(cands.s) > 0 {
		c := cands.pop()
		if len(res.s) >= ef && c.sim < res.s[0].sim {
			break
		}
		for _, nb := range g.neighbors(c.num, l) {
			if !vis.visit(nb) {
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

// grow makes room for nums below n.
func (g *graph) grow(n int) {
	for len(g.level) < n {
		g.level = append(g.level, -1)
		g.cnt0 = append(g.cnt0, 0)
	}
	if need := n * g.m0; len(g.links0) < need {
		g.links0 = append(g.links0, make([]uint32, need-len(g.links0))...)
	}
}

// insert adds num (whose vector vec already returns) to the graph.
func (g *graph) insert(num uint32) {
	g.grow(int(num) + 1)
	lvl := min(int(-math.Log(1-g.rng.Float64())*g.ml), 30)
	g.level[num] = int8(lvl)
	if lvl > 0 {
		g.upper[num] = make([][]uint32, lvl)
	}
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
	cur := g.neighbors(e, l)
	if len(cur) < mmax {
		if l == 0 {
			g.links0[int(e)*g.m0+len(cur)] = num
			g.cnt0[e]++
		} else {
			g.upper[e][l-1] = append(g.upper[e][l-1], num)
		}
		return
	}
	ev := g.vec(e)
	cs := make([]cand, 0, len(cur)+1)
	for _, n := range append(slices.Clone(cur), num) {
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

func (g *graph) writeTo(w io.Writer) error {
	le := binary.LittleEndian
	b := []byte(graphMagic)
	b = le.AppendUint32(b, uint32(g.m))
	b = le.AppendUint32(b, uint32(len(g.level)))
	b = le.AppendUint32(b, g.entry)
	b = le.AppendUint32(b, uint32(int32(g.top)))
	for _, l := range g.level {
		b = append(b, byte(l))
	}
	for _, c := range g.cnt0 {
		b = le.AppendUint16(b, c)
	}
	flush := func() error {
		_, err := w.Write(b)
		b = b[:0]
		return err
	}
	for i, x := range g.links0 {
		b = le.AppendUint32(b, x)
		if i%16384 == 0 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	for num, l := range g.level {
		for i := 1; i <= int(l); i++ {
			nb := g.upper[uint32(num)][i-1]
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

// readGraph decodes writeTo's format and checks every link.
func readGraph(b []byte, cfg Config, vec func(uint32) []float32) (*graph, error) {
	le := binary.LittleEndian
	g := newHNSW(cfg, vec)
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
	g.grow(n)
	for i := 0; i < n; i++ {
		g.level[i] = int8(b[i])
		if g.level[i] >= 0 {
			g.size++
		}
	}
	b = b[n:]
	for i := 0; i < n; i++ {
		g.cnt0[i] = le.Uint16(b[2*i:])
		if int(g.cnt0[i]) > g.m0 {
			return nil, fmt.Errorf("%w: node %d has %d links", errGraph, i, g.cnt0[i])
		}
	}
	b = b[2*n:]
	for i := range g.links0 {
		g.links0[i] = le.Uint32(b[4*i:])
	}
	b = b[4*len(g.links0):]
	for num, l := range g.level {
		if l <= 0 {
			continue
		}
		g.upper[uint32(num)] = make([][]uint32, l)
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
			g.upper[uint32(num)][i-1] = nb
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
