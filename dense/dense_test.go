package dense_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/hybrank/hybrank/dense"
	"github.com/hybrank/hybrank/internal/manifest"
)

// refsWhere is the allow-list of the Refs 0..n-1 that keep passes.
func refsWhere(n int, keep func(ref int) bool) *roaring.Bitmap {
	bm := roaring.New()
	for i := range n {
		if keep(i) {
			bm.Add(uint32(i))
		}
	}
	return bm
}

// clustered returns n vectors of dimension dim from a Gaussian mixture
// around c random centroids: each point is its centroid plus noise in a
// random 8-dimensional subspace of its cluster plus a little isotropic
// noise (local intrinsic dimension well below dim, as in real embeddings).
// Vectors are not normalised: Add does that.
func clustered(r *rand.Rand, n, dim, c int) [][]float32 {
	const rank = 8
	cents := make([][]float32, c)
	bases := make([][]float32, c) // rank × dim per cluster
	for i := range cents {
		cents[i] = make([]float32, dim)
		bases[i] = make([]float32, rank*dim)
		for j := range cents[i] {
			cents[i][j] = float32(r.NormFloat64())
		}
		for j := range bases[i] {
			bases[i][j] = float32(r.NormFloat64()) * 0.35
		}
	}
	out := make([][]float32, n)
	for i := range out {
		ci := r.IntN(c)
		v := make([]float32, dim)
		for j := range v {
			v[j] = cents[ci][j] + 0.3*float32(r.NormFloat64())
		}
		for k := 0; k < rank; k++ {
			z := float32(r.NormFloat64())
			for j := range v {
				v[j] += z * bases[ci][k*dim+j]
			}
		}
		out[i] = v
	}
	return out
}

func mustNew(t testing.TB, cfg dense.Config) *dense.Index {
	t.Helper()
	ix, err := dense.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// bruteForce ranks vecs (by index ID "v<i>") against q in float64.
func bruteForce(vecs map[string][]float32, q []float32, k int) []dense.Hit {
	norm := func(v []float32) float64 {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		return math.Sqrt(s)
	}
	qn := norm(q)
	var hits []dense.Hit
	for id, v := range vecs {
		var d float64
		for i := range v {
			d += float64(v[i]) * float64(q[i])
		}
		hits = append(hits, dense.Hit{ID: id, Score: float32(d / (norm(v) * qn))})
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
	return hits[:min(k, len(hits))]
}

func TestExactMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	const n, dim = 1500, 48
	ix := mustNew(t, dense.DefaultConfig(dim))
	vecs := map[string][]float32{}
	var items []dense.Item
	for i, v := range clustered(r, n, dim, 20) {
		id := fmt.Sprintf("v%d", i)
		vecs[id] = v
		items = append(items, dense.Item{ID: id, Vector: v})
	}
	if err := ix.Add(items...); err != nil {
		t.Fatal(err)
	}
	// Delete some so the scan must skip tombstones.
	for i := 0; i < n; i += 7 {
		id := fmt.Sprintf("v%d", i)
		ix.Delete(id)
		delete(vecs, id)
	}
	for qi := 0; qi < 20; qi++ {
		q := clustered(r, 1, dim, 1)[0]
		got, err := ix.SearchExact(context.Background(), q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteForce(vecs, q, 10)
		if len(got) != len(want) {
			t.Fatalf("query %d: %d hits, want %d", qi, len(got), len(want))
		}
		for i := range want {
			if math.Abs(float64(got[i].Score-want[i].Score)) > 1e-5 {
				t.Fatalf("query %d rank %d: got %v, want %v", qi, i, got[i], want[i])
			}
			if got[i].ID != want[i].ID && math.Abs(float64(got[i].Score-want[i].Score)) > 1e-6 {
				t.Fatalf("query %d rank %d: got %v, want %v", qi, i, got[i], want[i])
			}
		}
	}
}

func recallAt(got, want []dense.Hit) float64 {
	set := map[string]bool{}
	for _, h := range want {
		set[h.ID] = true
	}
	var hit int
	for _, h := range got {
		if set[h.ID] {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}

func TestRecallAtDefaults(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	n, dim, nq := 5000, 64, 100
	if raceEnabled {
		n, dim = 1500, 32
	}
	cfg := dense.DefaultConfig(dim)
	cfg.FlatThreshold = 0 // graph search only
	ix := mustNew(t, cfg)
	all := clustered(r, n+nq, dim, 50) // queries: held-out points
	var items []dense.Item
	for i, v := range all[:n] {
		items = append(items, dense.Item{ID: fmt.Sprint(i), Vector: v})
	}
	if err := ix.Add(items...); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var sum float64
	for _, q := range all[n:] {
		got, err := ix.Search(ctx, q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ix.SearchExact(ctx, q, 10, nil)
		sum += recallAt(got, want)
	}
	rec := sum / float64(nq)
	t.Logf("recall@10 = %.4f", rec)
	if rec < 0.95 {
		t.Fatalf("recall@10 = %.4f, want >= 0.95", rec)
	}
}

// TestTenantIsolation is a property test: many tenants of random sizes,
// random filters and k (often larger than the tenant), each as the
// allow-list of its items' Refs (as the engine builds them), and every hit
// must belong to the tenant and match the metadata filter.
func TestTenantIsolation(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	const dim = 16
	cfg := dense.DefaultConfig(dim)
	cfg.FlatThreshold = 50 // exercise the graph path for mid-size tenants
	ix := mustNew(t, cfg)
	type meta struct{ tenant, color string }
	owner := map[string]meta{}
	sizes := map[string]int{}
	allowOf := map[meta]*roaring.Bitmap{} // color "": any
	var items []dense.Item
	for ti := 0; ti < 30; ti++ {
		tenant := fmt.Sprintf("t%d", ti)
		size := []int{0, 1, 3, 20, 150, 500}[r.IntN(6)]
		for i := 0; i < size; i++ {
			id := fmt.Sprintf("%s-%d", tenant, i)
			color := []string{"red", "blue"}[r.IntN(2)]
			owner[id] = meta{tenant, color}
			sizes[tenant]++
			ref := uint32(len(items)) + 1 // 0 is NoRef
			for _, m := range []meta{{tenant, ""}, {tenant, color}} {
				if allowOf[m] == nil {
					allowOf[m] = roaring.New()
				}
				allowOf[m].Add(ref)
			}
			v := make([]float32, dim)
			for j := range v {
				v[j] = float32(r.NormFloat64())
			}
			items = append(items, dense.Item{ID: id, Vector: v, Ref: ref})
		}
	}
	r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	if err := ix.Add(items...); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for trial := 0; trial < 200; trial++ {
		tenant := fmt.Sprintf("t%d", r.IntN(32)) // t30, t31 do not exist
		f := meta{tenant: tenant}
		if r.IntN(3) == 0 {
			f.color = "red"
		}
		allow := allowOf[f]
		if allow == nil {
			allow = roaring.New()
		}
		k := 1 + r.IntN(60)
		q := make([]float32, dim)
		for j := range q {
			q[j] = float32(r.NormFloat64())
		}
		for name, search := range map[string]func(context.Context, []float32, int, *roaring.Bitmap) ([]dense.Hit, error){
			"hnsw": ix.Search, "exact": ix.SearchExact,
		} {
			hits, err := search(ctx, q, k, allow)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, h := range hits {
				m, ok := owner[h.ID]
				if !ok || m.tenant != tenant || (f.color != "" && m.color != "red") || seen[h.ID] {
					t.Fatalf("%s trial %d: filter %+v returned %q (%+v)", name, trial, f, h.ID, m)
				}
				seen[h.ID] = true
			}
			// A filter matching m items must return min(k, m) hits.
			match := 0
			for _, m := range owner {
				if m.tenant == tenant && (f.color == "" || m.color == "red") {
					match++
				}
			}
			if len(hits) != min(k, match) {
				t.Fatalf("%s trial %d: %d hits for k=%d and %d matching", name, trial, len(hits), k, match)
			}
		}
	}
}

func TestDeleteAndReplace(t *testing.T) {
	ix := mustNew(t, dense.DefaultConfig(2))
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ix.Add(dense.Item{ID: "a", Vector: []float32{1, 0}}, dense.Item{ID: "b", Vector: []float32{0, 1}}))
	must(ix.Add(dense.Item{ID: "a", Vector: []float32{0, 2}})) // replace: now parallel to b
	if ix.Len() != 2 || ix.Tombstones() != 1 {
		t.Fatalf("Len %d Tombstones %d, want 2 and 1", ix.Len(), ix.Tombstones())
	}
	hits, err := ix.Search(ctx, []float32{1, 0}, 5, nil)
	must(err)
	if len(hits) != 2 || hits[0].Score > 1e-6 {
		t.Fatalf("after replace got %v", hits)
	}
	must(ix.Delete("a", "unknown"))
	hits, _ = ix.Search(ctx, []float32{0, 1}, 5, nil)
	if len(hits) != 1 || hits[0].ID != "b" {
		t.Fatalf("after delete got %v", hits)
	}
	must(ix.Compact(ctx))
	if ix.Tombstones() != 0 {
		t.Fatalf("Compact left %d tombstones", ix.Tombstones())
	}
	must(ix.Delete("b"))
	hits, err = ix.Search(ctx, []float32{0, 1}, 5, nil)
	if err != nil || len(hits) != 0 {
		t.Fatalf("empty index: %v %v", hits, err)
	}
	must(ix.Compact(ctx)) // empty graph
	hits, err = ix.Search(ctx, []float32{0, 1}, 5, nil)
	if err != nil || len(hits) != 0 {
		t.Fatalf("empty compacted index: %v %v", hits, err)
	}
}

func TestBadInput(t *testing.T) {
	ix := mustNew(t, dense.DefaultConfig(3))
	ctx := context.Background()
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"empty id", ix.Add(dense.Item{Vector: []float32{1, 0, 0}}), dense.ErrEmptyID},
		{"short vector", ix.Add(dense.Item{ID: "x", Vector: []float32{1, 0}}), dense.ErrDim},
		{"zero vector", ix.Add(dense.Item{ID: "x", Vector: []float32{0, 0, 0}}), dense.ErrVector},
		{"nan vector", ix.Add(dense.Item{ID: "x", Vector: []float32{float32(math.NaN()), 0, 0}}), dense.ErrVector},
		{"k zero", func() error { _, err := ix.Search(ctx, []float32{1, 0, 0}, 0, nil); return err }(), dense.ErrK},
		{"query dim", func() error { _, err := ix.SearchExact(ctx, []float32{1}, 1, nil); return err }(), dense.ErrDim},
		{"config dim", func() error { _, err := dense.New(dense.DefaultConfig(0)); return err }(), dense.ErrConfig},
		{"config metric", func() error {
			c := dense.DefaultConfig(3)
			c.Metric = "l2"
			return c.Validate()
		}(), dense.ErrConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.want) {
				t.Fatalf("got %v, want %v", tc.err, tc.want)
			}
		})
	}
	if ix.Len() != 0 {
		t.Fatalf("failed adds changed the index: Len %d", ix.Len())
	}
	ix.Close()
	if err := ix.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := ix.Search(ctx, []float32{1, 0, 0}, 1, nil); !errors.Is(err, dense.ErrClosed) {
		t.Fatalf("Search after Close: %v", err)
	}
}

func TestConcurrentSearchDuringAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	const dim = 16
	vecs := clustered(r, 800, dim, 10)
	ix := mustNew(t, dense.DefaultConfig(dim))
	// Tenant a: the even Refs, b: the odd ones (an item i has ID and Ref
	// i%600, of i's parity).
	tenants := [2]*roaring.Bitmap{refsWhere(600, func(i int) bool { return i%2 == 0 }), refsWhere(600, func(i int) bool { return i%2 == 1 })}
	if err := ix.Add(dense.Item{ID: "seed", Vector: vecs[0], Ref: 600}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := ix.Search(ctx, vecs[(i*7+w)%len(vecs)], 5, tenants[i%2]); err != nil {
					t.Error(err)
					return
				}
				if _, err := ix.Search(ctx, vecs[i%len(vecs)], 5, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	for i := 1; i < len(vecs); i++ {
		it := dense.Item{ID: fmt.Sprint(i % 600), Vector: vecs[i], Ref: uint32(i % 600)}
		if err := ix.Add(it); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			ix.Delete(fmt.Sprint(i - 50))
		}
	}
	close(stop)
	wg.Wait()
}

func buildSmall(t *testing.T, n, dim int) (*dense.Index, [][]float32) {
	r := rand.New(rand.NewPCG(5, 5))
	cfg := dense.DefaultConfig(dim)
	cfg.FlatThreshold = 10
	ix := mustNew(t, cfg)
	vecs := clustered(r, n, dim, 8)
	for i, v := range vecs {
		err := ix.Add(dense.Item{ID: fmt.Sprint(i), Vector: v, Ref: uint32(i)})
		if err != nil {
			t.Fatal(err)
		}
	}
	ix.Delete("5", "17")
	return ix, clustered(r, 20, dim, 8)
}

func TestPersistRoundTrip(t *testing.T) {
	ix, queries := buildSmall(t, 600, 12)
	dir := t.TempDir()
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := ix.Save(dir); err != nil { // second generation replaces the first
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 4 {
		t.Fatalf("snapshot dir has %d entries, want 4 (manifest, items, vectors, graph)", len(ents))
	}
	re, err := dense.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	if re.Len() != ix.Len() || re.Config() != ix.Config() || re.Tombstones() != ix.Tombstones() {
		t.Fatalf("reopened Len %d cfg %+v tomb %d, want %d %+v %d", re.Len(), re.Config(), re.Tombstones(), ix.Len(), ix.Config(), ix.Tombstones())
	}
	ctx := context.Background()
	// Tenant i%3 == 1; tenant 2 with i%2 == 0.
	filters := []*roaring.Bitmap{nil, refsWhere(600, func(i int) bool { return i%3 == 1 }), refsWhere(600, func(i int) bool { return i%3 == 2 && i%2 == 0 })}
	for _, q := range queries {
		for _, f := range filters {
			for name, pair := range map[string][2]func(context.Context, []float32, int, *roaring.Bitmap) ([]dense.Hit, error){
				"exact": {ix.SearchExact, re.SearchExact},
				// k beyond the graph's greedy width: exhaustive, hence deterministic.
				"hnsw": {ix.Search, re.Search},
			} {
				k := 10
				if name == "hnsw" {
					k = 700
				}
				a, err1 := pair[0](ctx, q, k, f)
				b, err2 := pair[1](ctx, q, k, f)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !slices.Equal(a, b) {
					t.Fatalf("%s filter %+v: reopened results differ:\n%v\n%v", name, f, a, b)
				}
			}
		}
	}
	// The reopened index accepts new items.
	if err := re.Add(dense.Item{ID: "new", Vector: queries[0]}); err != nil {
		t.Fatal(err)
	}
	if h, _ := re.Search(ctx, queries[0], 1, nil); len(h) != 1 || h[0].ID != "new" {
		t.Fatalf("added after reopen: %v", h)
	}
}

func TestOpenCorrupt(t *testing.T) {
	ix, _ := buildSmall(t, 200, 8)
	src := t.TempDir()
	if err := ix.Save(src); err != nil {
		t.Fatal(err)
	}
	find := func(dir, prefix string) string {
		m, _ := filepath.Glob(filepath.Join(dir, prefix+"*"))
		if len(m) != 1 {
			t.Fatalf("glob %s: %v", prefix, m)
		}
		return m[0]
	}
	tests := []struct {
		name   string
		damage func(dir string)
		want   error
	}{
		{"flipped byte in graph", func(dir string) {
			p := find(dir, "graph-")
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 0x40
			os.WriteFile(p, b, 0o644)
		}, dense.ErrCorrupt},
		{"truncated items", func(dir string) {
			p := find(dir, "items-")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-3], 0o644)
		}, dense.ErrCorrupt},
		{"missing graph", func(dir string) { os.Remove(find(dir, "graph-")) }, dense.ErrCorrupt},
		{"garbage manifest", func(dir string) { os.WriteFile(filepath.Join(dir, "MANIFEST"), []byte("{nope"), 0o644) }, dense.ErrCorrupt},
		{"newer version", func(dir string) {
			p := filepath.Join(dir, "MANIFEST")
			b, _ := os.ReadFile(p)
			body, err := manifest.Unseal(b)
			if err != nil {
				t.Fatal(err)
			}
			body = []byte(replaceOnce(string(body), fmt.Sprintf(`"version":%d`, dense.FormatVersion), `"version":99`))
			os.WriteFile(p, manifest.Seal(body), 0o644)
		}, dense.ErrVersion},
		{"no snapshot", func(dir string) { os.Remove(filepath.Join(dir, "MANIFEST")) }, os.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ents, _ := os.ReadDir(src)
			for _, e := range ents {
				b, _ := os.ReadFile(filepath.Join(src, e.Name()))
				os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
			}
			tc.damage(dir)
			if _, err := dense.Open(dir); !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
		})
	}
}

func replaceOnce(s, old, new string) string {
	i := indexOf(s, old)
	if i < 0 {
		return s
	}
	return s[:i] + new + s[i+len(old):]
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// itemsV2 is the items file of formats 1 and 2 for buildSmall's live
// items (item i has num i, tenant i%3 and metadata p = i%2; 5 and 17 are
// deleted): the tenant and metadata where format 3 has the Ref.
func itemsV2(n int) []byte {
	b := []byte("HRDENSE1")
	b = binary.LittleEndian.AppendUint32(b, uint32(n-2))
	str := func(s string) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	for i := range n {
		if i == 5 || i == 17 {
			continue
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(i))
		str(fmt.Sprint(i))
		str(fmt.Sprint(i % 3))
		b = binary.LittleEndian.AppendUint32(b, 1)
		str("p")
		str(fmt.Sprint(i % 2))
	}
	return b
}

// TestOpenVersion1 opens a snapshot whose manifest is in the version-1
// layout (plain indented JSON, one record per file, no checksum of its
// own) and whose items carry tenants and metadata instead of Refs, as
// written before the shared manifest package; SetRefs then gives the items
// their Refs.
func TestOpenVersion1(t *testing.T) {
	ix, queries := buildSmall(t, 200, 8)
	dir := t.TempDir()
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, manifest.Name)
	raw, _ := os.ReadFile(p)
	body, err := manifest.Unseal(raw)
	if err != nil {
		t.Fatal(err)
	}
	var cur struct {
		manifest.Header
		Config dense.Config `json:"config"`
		Next   uint32       `json:"next"`
	}
	if err := json.Unmarshal(body, &cur); err != nil {
		t.Fatal(err)
	}
	old := map[string]any{"version": 1, "generation": cur.Generation, "config": cur.Config, "next": cur.Next}
	for _, f := range cur.Files {
		kind := f.Name[:strings.IndexByte(f.Name, '-')]
		if kind == "items" {
			b := itemsV2(200)
			if err := os.WriteFile(filepath.Join(dir, f.Name), b, 0o644); err != nil {
				t.Fatal(err)
			}
			f.Size, f.CRC32C = int64(len(b)), crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
		}
		old[kind] = f
	}
	js, _ := json.MarshalIndent(old, "", "  ")
	os.WriteFile(p, js, 0o644)
	re, err := dense.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	for _, q := range queries {
		a, err1 := ix.SearchExact(context.Background(), q, 10, nil)
		b, err2 := re.SearchExact(context.Background(), q, 10, nil)
		if err1 != nil || err2 != nil || !slices.Equal(a, b) {
			t.Fatalf("version-1 reopen differs: %v %v\n%v\n%v", err1, err2, a, b)
		}
	}
	odd := refsWhere(200, func(i int) bool { return i%2 == 1 })
	if h, err := re.SearchExact(context.Background(), queries[0], 10, odd); err != nil || len(h) != 0 {
		t.Fatalf("items without Refs passed an allow-list: %v %v", h, err)
	}
	refs := map[string]uint32{}
	for i := range 200 {
		refs[fmt.Sprint(i)] = uint32(i)
	}
	if err := re.SetRefs(map[string]uint32{"0": 1}); !errors.Is(err, dense.ErrRef) {
		t.Fatalf("SetRefs missing IDs: %v, want ErrRef", err)
	}
	if err := re.SetRefs(refs); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		for name, search := range map[string][2]func(context.Context, []float32, int, *roaring.Bitmap) ([]dense.Hit, error){
			"exact": {ix.SearchExact, re.SearchExact}, "hnsw": {ix.Search, re.Search},
		} {
			a, err1 := search[0](context.Background(), q, 10, odd)
			b, err2 := search[1](context.Background(), q, 10, odd)
			if err1 != nil || err2 != nil || !slices.Equal(a, b) {
				t.Fatalf("%s after SetRefs differs: %v %v\n%v\n%v", name, err1, err2, a, b)
			}
		}
	}
	// A damaged version-1 manifest is corrupt, not a newer version.
	os.WriteFile(p, js[:len(js)/2], 0o644)
	if _, err := dense.Open(dir); !errors.Is(err, dense.ErrCorrupt) {
		t.Fatalf("torn version-1 manifest: %v", err)
	}
}

// TestSearchHugeK: any positive k is valid; one far beyond the index
// returns what there is (it had sized a heap of k entries and panicked).
func TestSearchHugeK(t *testing.T) {
	ix, err := dense.New(dense.DefaultConfig(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(dense.Item{ID: "a", Vector: []float32{1, 0}}); err != nil {
		t.Fatal(err)
	}
	for _, search := range []func(context.Context, []float32, int, *roaring.Bitmap) ([]dense.Hit, error){ix.Search, ix.SearchExact} {
		hits, err := search(context.Background(), []float32{1, 0}, math.MaxInt, nil)
		if err != nil || len(hits) != 1 {
			t.Fatalf("k = MaxInt: %v %v", hits, err)
		}
	}
}

// TestExtremeMagnitudes: vectors whose float32 sum of squares overflows or
// underflows are stored normalised like any other, so scores stay cosines
// (they had been stored as given: scores of 1e20 and 1e-25).
func TestExtremeMagnitudes(t *testing.T) {
	ix, err := dense.New(dense.DefaultConfig(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(dense.Item{ID: "big", Vector: []float32{1e20, 1e18}}, dense.Item{ID: "tiny", Vector: []float32{1e-25, 0}},
		dense.Item{ID: "unit", Vector: []float32{0.8, 0.6}}); err != nil {
		t.Fatal(err)
	}
	hits, err := ix.SearchExact(context.Background(), []float32{1e-30, 0}, 3, nil)
	if err != nil || len(hits) != 3 || hits[0].ID != "tiny" || hits[1].ID != "big" || hits[2].ID != "unit" ||
		math.Abs(float64(hits[0].Score)-1) > 1e-6 || math.Abs(float64(hits[2].Score)-0.8) > 1e-6 {
		t.Fatalf("scores are not cosines: %+v %v", hits, err)
	}
	if err := dense.CheckVector([]float32{0, 0}, 2); !errors.Is(err, dense.ErrVector) {
		t.Fatalf("CheckVector of a zero vector: %v", err)
	}
}
