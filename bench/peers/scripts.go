package peers

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/simd"
)

// BM25sArgs runs bm25s_run.py on a BEIR folder.
type BM25sArgs struct {
	// Data is the BEIR dataset folder (corpus.jsonl, queries.jsonl).
	Data string
	// K is the number of hits per query; Method ("lucene", "robertson",
	// "atire", "bm25l", "bm25+"), K1, B and Delta the scoring.
	K      int
	Method string
	K1, B  float64
	Delta  float64
	// Rounds of timed retrieval; the fastest is reported.
	Rounds int
}

// BM25sResult is what bm25s_run.py reports, and its run.
type BM25sResult struct {
	Version string  `json:"version"`
	Method  string  `json:"method"`
	K1      float64 `json:"k1"`
	B       float64 `json:"b"`
	Delta   float64 `json:"delta"`
	K       int     `json:"k"`
	Docs    int     `json:"docs"`
	Queries int     `json:"queries"`
	// IndexS is tokenization (stopwords, stemming) + indexing; RetrieveS
	// the fastest round of all queries, their tokenization included.
	IndexS    float64 `json:"index_s"`
	RetrieveS float64 `json:"retrieve_s"`
	QPS       float64 `json:"qps"`
	Threads   int     `json:"threads"`
	// Run is the run file in the order trec_eval reads it (eval.TrecOrder).
	Run eval.Run `json:"-"`
}

// BM25s indexes a.Data with bm25s and retrieves every query of it.
func (r *Runner) BM25s(ctx context.Context, a BM25sArgs) (BM25sResult, error) {
	var res BM25sResult
	dir, err := workDir()
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	data, err := filepath.Abs(a.Data)
	if err != nil {
		return res, err
	}
	run := filepath.Join(dir, "run.tsv")
	args := []string{"--data", data, "--run", run, "--k", strconv.Itoa(a.K), "--method", a.Method,
		"--k1", ftoa(a.K1), "--b", ftoa(a.B), "--delta", ftoa(a.Delta), "--rounds", strconv.Itoa(a.Rounds)}
	if err := r.Run(ctx, dir, "bm25s_run.py", args, &res); err != nil {
		return res, err
	}
	if res.Run, err = ReadRun(run); err != nil {
		return res, err
	}
	return res, nil
}

// ReadRun reads a run file of bm25s_run.py (TSV: query id, document id,
// rank, score) and orders each query's documents as trec_eval does
// (eval.TrecOrder: score descending, ties by id descending), so it is
// scored exactly as hybrank's hits are.
func ReadRun(path string) (eval.Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOutput, err)
	}
	defer f.Close()
	type hit struct {
		id    string
		score float64
	}
	hits := map[string][]hit{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		fs := strings.Split(sc.Text(), "\t")
		if len(fs) != 4 {
			return nil, fmt.Errorf("%w: %s:%d: want 4 tab-separated fields, got %d", ErrOutput, path, line, len(fs))
		}
		s, err := strconv.ParseFloat(fs[3], 64)
		if err != nil || fs[0] == "" || fs[1] == "" {
			return nil, fmt.Errorf("%w: %s:%d: %q", ErrOutput, path, line, sc.Text())
		}
		hits[fs[0]] = append(hits[fs[0]], hit{fs[1], s})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrOutput, path, err)
	}
	run := make(eval.Run, len(hits))
	for q, hs := range hits {
		run[q] = eval.TrecOrder(hs, func(h hit) string { return h.id }, func(h hit) float64 { return h.score })
	}
	return run, nil
}

// FaissArgs runs faiss_hnsw.py: IndexHNSWFlat with inner product, one
// thread.
type FaissArgs struct {
	Base, Queries [][]float32
	// Normalize L2-normalises every vector on its way to the file (the
	// caller's slices are not modified), so inner product is cosine, as in
	// hybrank's dense index.
	Normalize         bool
	M, EfConstruction int
	// Efs are the efSearch values searched, each over all queries.
	Efs []int
	// K is the number of neighbours per query.
	K int
	// Rounds of timed search per ef; the fastest is reported.
	Rounds int
}

// FaissResult is what faiss_hnsw.py reports, and the neighbours it found.
type FaissResult struct {
	Version        string     `json:"version"`
	Index          string     `json:"index"`
	Metric         string     `json:"metric"`
	M              int        `json:"m"`
	EfConstruction int        `json:"ef_construction"`
	K              int        `json:"k"`
	N              int        `json:"n"`
	Queries        int        `json:"queries"`
	Dim            int        `json:"dim"`
	BuildS         float64    `json:"build_s"`
	Threads        int        `json:"threads"`
	Rows           []FaissRow `json:"rows"`
}

// FaissRow is one efSearch: the fastest round over all queries (one
// batched search call), and every query's neighbours (row numbers of
// Base, best first; -1 where faiss found fewer than K).
type FaissRow struct {
	Ef      int       `json:"ef"`
	SearchS float64   `json:"search_s"`
	QPS     float64   `json:"qps"`
	IDs     [][]int64 `json:"-"`
}

// FaissHNSW builds faiss's HNSW over a.Base and searches a.Queries at
// every ef.
func (r *Runner) FaissHNSW(ctx context.Context, a FaissArgs) (FaissResult, error) {
	var res FaissResult
	if len(a.Base) == 0 || len(a.Queries) == 0 || a.K < 1 || len(a.Efs) == 0 {
		return res, fmt.Errorf("peers: faiss: need vectors, queries, k and an ef (%d, %d, %d, %d)", len(a.Base), len(a.Queries), a.K, len(a.Efs))
	}
	dim := len(a.Base[0])
	dir, err := workDir()
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	base, queries := filepath.Join(dir, "base.f32"), filepath.Join(dir, "queries.f32")
	if err := WriteFloat32s(base, a.Base, dim, a.Normalize); err != nil {
		return res, err
	}
	if err := WriteFloat32s(queries, a.Queries, dim, a.Normalize); err != nil {
		return res, err
	}
	out := filepath.Join(dir, "ids")
	args := []string{"--base", base, "--queries", queries, "--dim", strconv.Itoa(dim), "--out", out,
		"--k", strconv.Itoa(a.K), "--m", strconv.Itoa(a.M), "--ef-construction", strconv.Itoa(a.EfConstruction),
		"--ef", joinInts(a.Efs), "--rounds", strconv.Itoa(a.Rounds)}
	var raw struct {
		FaissResult
		Rows []struct {
			FaissRow
			File string `json:"ids"`
		} `json:"rows"`
	}
	if err := r.Run(ctx, dir, "faiss_hnsw.py", args, &raw); err != nil {
		return res, err
	}
	res = raw.FaissResult
	res.Rows = nil
	if len(raw.Rows) != len(a.Efs) {
		return res, fmt.Errorf("%w: faiss: %d rows for %d ef values", ErrOutput, len(raw.Rows), len(a.Efs))
	}
	for _, row := range raw.Rows {
		fr := row.FaissRow
		if fr.IDs, err = ReadInt64s(row.File, len(a.Queries), a.K); err != nil {
			return res, err
		}
		res.Rows = append(res.Rows, fr)
	}
	return res, nil
}

// RerankPeer names a cross-encoder peer: the script that runs it.
type RerankPeer string

const (
	// PeerORT is ONNX Runtime's Python package (ort_rerank.py) on the CPU,
	// running the model directory's ONNX file.
	PeerORT RerankPeer = "onnxruntime-python"
	// PeerTorch is PyTorch with transformers' BERT and scaled-dot-product
	// attention (torch_rerank.py) on Device in DType, with the weights of
	// the model directory's ONNX file. It needs torch, transformers, onnx
	// and tokenizers in the interpreter's environment (not make peers).
	PeerTorch RerankPeer = "torch"
)

// Valid reports whether p names a peer script.
func (p RerankPeer) Valid() bool { return p == PeerORT || p == PeerTorch }

func (p RerankPeer) script() string {
	if p == PeerTorch {
		return "torch_rerank.py"
	}
	return "ort_rerank.py"
}

// RerankArgs runs a cross-encoder peer on the model directory's weights,
// tokenized by Hugging Face tokenizers (longest_first truncation to
// MaxLength), pairs in input order in batches of each size, padded to the
// batch's longest.
type RerankArgs struct {
	// Peer is the script; "" is PeerORT.
	Peer     RerankPeer
	ModelDir string
	Pairs    []models.Pair
	// Batches are the batch sizes, each scoring every pair.
	Batches []int
	// Threads is the intra-op (CPU) thread count.
	Threads int
	// MaxLength is the truncation length, special tokens included.
	MaxLength int
	// Rounds per batch size; the fastest is reported.
	Rounds int
	// Device ("cuda", "cpu") and DType ("float16", "bfloat16", "float32")
	// of PeerTorch; "" is cuda and float16.
	Device, DType string
}

// RerankResult is what a rerank peer reports, and its scores.
type RerankResult struct {
	Peer    RerankPeer `json:"peer"`
	Version string     `json:"version"`
	// Device, DType and GPU (the device's name) are PeerTorch's.
	Device    string      `json:"device,omitempty"`
	DType     string      `json:"dtype,omitempty"`
	GPU       string      `json:"gpu,omitempty"`
	Threads   int         `json:"threads"`
	Pairs     int         `json:"pairs"`
	MaxLength int         `json:"max_length"`
	Rows      []RerankRow `json:"rows"`
}

// RerankRow is one batch size: the fastest round over every pair
// (tokenization included), real and padded tokens, and the logits in pair
// order.
type RerankRow struct {
	Batch        int       `json:"batch"`
	Seconds      float64   `json:"seconds"`
	PairsPerS    float64   `json:"pairs_per_s"`
	Tokens       int       `json:"tokens"`
	PaddedTokens int       `json:"padded_tokens"`
	Scores       []float32 `json:"-"`
}

// Rerank scores a.Pairs with the peer a.Peer at every batch size.
func (r *Runner) Rerank(ctx context.Context, a RerankArgs) (RerankResult, error) {
	var res RerankResult
	if a.Peer == "" {
		a.Peer = PeerORT
	}
	if !a.Peer.Valid() {
		return res, fmt.Errorf("%w: rerank peer %q (want %s or %s)", bench.ErrBadOption, a.Peer, PeerORT, PeerTorch)
	}
	if len(a.Pairs) == 0 || len(a.Batches) == 0 {
		return res, fmt.Errorf("peers: %s: need pairs and a batch size", a.Peer)
	}
	dir, err := workDir()
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	pairs := filepath.Join(dir, "pairs.jsonl")
	if err := writePairs(pairs, a.Pairs); err != nil {
		return res, err
	}
	model, err := filepath.Abs(a.ModelDir)
	if err != nil {
		return res, err
	}
	out := filepath.Join(dir, "scores")
	args := []string{"--model", model, "--pairs", pairs, "--out", out, "--batch", joinInts(a.Batches),
		"--threads", strconv.Itoa(a.Threads), "--max-length", strconv.Itoa(a.MaxLength), "--rounds", strconv.Itoa(a.Rounds)}
	if a.Peer == PeerTorch {
		args = append(args, "--device", cmp.Or(a.Device, "cuda"), "--dtype", cmp.Or(a.DType, "float16"))
	}
	var raw struct {
		RerankResult
		Rows []struct {
			RerankRow
			File string `json:"scores"`
		} `json:"rows"`
	}
	if err := r.Run(ctx, dir, a.Peer.script(), args, &raw); err != nil {
		return res, err
	}
	res = raw.RerankResult
	res.Rows = nil
	if len(raw.Rows) != len(a.Batches) || res.Pairs != len(a.Pairs) || res.Peer != a.Peer {
		return res, fmt.Errorf("%w: %s: peer %q, %d rows for %d batch sizes, %d pairs for %d", ErrOutput, a.Peer, res.Peer, len(raw.Rows), len(a.Batches), res.Pairs, len(a.Pairs))
	}
	for _, row := range raw.Rows {
		rr := row.RerankRow
		if rr.Scores, err = ReadFloat32s(row.File, len(a.Pairs)); err != nil {
			return res, err
		}
		res.Rows = append(res.Rows, rr)
	}
	return res, nil
}

// writePairs writes one {"query", "doc"} object per line.
func writePairs(path string, pairs []models.Pair) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, p := range pairs {
		if err := enc.Encode(struct {
			Query string `json:"query"`
			Doc   string `json:"doc"`
		}{p.Query, p.Doc}); err != nil {
			f.Close()
			return fmt.Errorf("peers: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("peers: %w", err)
	}
	return f.Close()
}

// WriteFloat32s writes rows as raw little-endian float32, row-major: the
// vector files of faiss_hnsw.py, each row L2-normalised when normalize is
// set (rows are not modified). Every row must have dim values.
func WriteFloat32s(path string, rows [][]float32, dim int, normalize bool) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	buf := make([]byte, 4*dim)
	row := make([]float32, dim)
	for i, v := range rows {
		if len(v) != dim {
			f.Close()
			return fmt.Errorf("peers: vector %d has dimension %d, want %d", i, len(v), dim)
		}
		copy(row, v)
		if normalize {
			simd.L2Normalize(row)
		}
		for j, x := range row {
			binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(x))
		}
		if _, err := w.Write(buf); err != nil {
			f.Close()
			return fmt.Errorf("peers: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("peers: %w", err)
	}
	return f.Close()
}

// ReadInt64s reads rows × cols little-endian int64 (faiss's neighbour
// ids); a file of another size is ErrOutput.
func ReadInt64s(path string, rows, cols int) ([][]int64, error) {
	b, err := readSized(path, rows*cols*8)
	if err != nil {
		return nil, err
	}
	out := make([][]int64, rows)
	flat := make([]int64, rows*cols)
	for i := range flat {
		flat[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	for i := range out {
		out[i] = flat[i*cols : (i+1)*cols : (i+1)*cols]
	}
	return out, nil
}

// ReadFloat32s reads n little-endian float32 (the peer's scores); a file
// of another size is ErrOutput.
func ReadFloat32s(path string, n int) ([]float32, error) {
	b, err := readSized(path, n*4)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

func readSized(path string, size int) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOutput, err)
	}
	if len(b) != size {
		return nil, fmt.Errorf("%w: %s has %d bytes, want %d", ErrOutput, path, len(b), size)
	}
	return b, nil
}

// joinInts is a comma list, as the scripts read lists.
func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// ftoa formats a parameter so Python reads back the same float64.
func ftoa(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
