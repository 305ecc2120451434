package dense

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/peers"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/vcache"
	"github.com/hybrank/hybrank/dense"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/simd"
)

// QualityConfig configures `bench dense --beir`: retrieval quality of
// real embedders on BEIR datasets. Each model × dataset embeds the corpus
// as documents and the judged queries as queries (the model's prompts),
// then ranks by exact cosine (kind=flat) and by the HNSW index at its
// default M and EfSearch (kind=hnsw), plus faiss's HNSW with Peers; every
// ranking is scored by bench/eval. Safe to copy.
type QualityConfig struct {
	// Models are model directories (sentence-transformers files read by
	// models.OpenModelDir); the row's model is the folder's base name.
	Models []string `json:"models"`
	// Datasets are BEIR dataset folders.
	Datasets []string `json:"datasets"`
	// CacheDir keeps the vectors of each model × dataset × input kind,
	// keyed by a hash of the ONNX file, the sentence-transformers settings,
	// the sequence length and the texts ("" = no cache).
	CacheDir string `json:"cache_dir"`
	// TopK is the ranking depth scored (100: Recall@100).
	TopK int `json:"top_k"`
	// Batch is the texts per Embed call.
	Batch int `json:"batch"`
	// Provider and Threads are the embedder's ONNX Runtime provider and
	// intra-op threads (0 = the model's default).
	Provider string `json:"provider"`
	Threads  int    `json:"threads,omitempty"`
	// Eval selects evaluation conventions; the zero value keeps identical
	// ids, as MTEB does (ignore_identical_ids=False).
	Eval eval.Options `json:"eval"`
	// Int8 also measures each float32 model (one without an int8 suffix,
	// see fp32Of) quantized by onnx/quantize, loaded with
	// models.Config.Quantize = int8, as the row model "<model>-int8":
	// hybrank's own quantization on real weights, checked against
	// Targets.MaxInt8Delta. Int8Cache keeps the quantized copies ("" =
	// the user cache, see models.Config.QuantizeCache).
	Int8      bool   `json:"int8,omitempty"`
	Int8Cache string `json:"int8_cache,omitempty"`
	// Peers adds faiss's IndexHNSWFlat at the index's default M,
	// EfConstruction and EfSearch on the same vectors.
	Peers peers.Config `json:"peers"`
	// Targets are the checks against published figures.
	Targets QualityTargets `json:"targets"`
	// Progress forces progress bars; Log receives a line per row.
	Progress bool      `json:"-"`
	Log      io.Writer `json:"-"`
}

// QualityTargets bound the distance to published MTEB figures (MaxDelta)
// and an int8 model's distance to its float32 original (MaxInt8Delta), in
// nDCG@10 of the exact ranking.
type QualityTargets struct {
	MaxDelta     float64 `json:"max_delta"`
	MaxInt8Delta float64 `json:"max_int8_delta"`
}

// DefaultQualityConfig returns top 100, batches of 32, cache under
// out/cache, the auto provider, MTEB's conventions, peers off and the
// issue's targets (±0.01 of MTEB, int8 within 0.005 of float32).
func DefaultQualityConfig() QualityConfig {
	return QualityConfig{
		TopK: 100, Batch: 32, CacheDir: filepath.Join("out", "cache"), Provider: "auto",
		Targets: QualityTargets{MaxDelta: 0.01, MaxInt8Delta: 0.005},
	}
}

// Validate reports the first unusable option.
func (c QualityConfig) Validate() error {
	switch {
	case len(c.Models) == 0 || len(c.Datasets) == 0:
		return fmt.Errorf("%w: dense: quality needs at least one model and one dataset", bench.ErrBadOption)
	case c.TopK < 10:
		return fmt.Errorf("%w: dense: top_k %d is below nDCG@10's depth", bench.ErrBadOption, c.TopK)
	case c.Batch < 1 || c.Batch > models.DefaultMaxDocs:
		return fmt.Errorf("%w: dense: batch %d outside 1..%d", bench.ErrBadOption, c.Batch, models.DefaultMaxDocs)
	case c.Threads < 0:
		return fmt.Errorf("%w: dense: threads %d", bench.ErrBadOption, c.Threads)
	case c.Int8Cache != "" && !c.Int8:
		return fmt.Errorf("%w: dense: an int8 cache without --int8", bench.ErrBadOption)
	case !(c.Targets.MaxDelta >= 0) || !(c.Targets.MaxInt8Delta >= 0):
		return fmt.Errorf("%w: dense: targets %+v", bench.ErrBadOption, c.Targets)
	}
	for _, s := range append(append([]string(nil), c.Models...), c.Datasets...) {
		if s == "" {
			return fmt.Errorf("%w: dense: empty model or dataset path", bench.ErrBadOption)
		}
	}
	return c.Peers.Validate()
}

// QualityRow is one ranking of one model on one dataset: a line of
// dense_real.md.
type QualityRow struct {
	Model       string `json:"model" table:""`
	RealWeights bool   `json:"real_weights" table:""`
	Dataset     string `json:"dataset" table:""`
	// Impl and Kind: hybrank flat (exact cosine), hybrank hnsw, faiss hnsw.
	Impl     string `json:"impl" table:""`
	Version  string `json:"version,omitempty"`
	Kind     string `json:"kind" table:""`
	M        int    `json:"m,omitempty" table:""`
	EfSearch int    `json:"ef_search,omitempty" table:""`
	Docs     int    `json:"docs" table:""`
	Queries  int    `json:"queries" table:""`
	Dim      int    `json:"dim"`
	MaxLen   int    `json:"max_len" table:""`
	// EmbedS is the wall time of embedding the corpus and the queries (0
	// when both came from the cache: Cached).
	EmbedS    float64 `json:"embed_s" table:""`
	DocsPerS  float64 `json:"docs_per_s,omitempty" table:"docs/s"`
	Cached    bool    `json:"cached" table:""`
	NDCG10    float64 `json:"ndcg_at_10" table:"nDCG@10"`
	Recall100 float64 `json:"recall_at_100" table:"R@100"`
	MRR10     float64 `json:"mrr_at_10" table:"MRR@10"`
	QPS       float64 `json:"qps" table:""`
	// SpearmanMean and SpearmanWorst, on an int8 model's exact row whose
	// float32 original ran on the same data: per query, the rank
	// correlation of the two models' cosine scores over the float32
	// model's exact top 32 documents (agreementK): the fidelity of the int8
	// arithmetic on real weights, as bench rerank --int8 measures it on
	// cross-encoder scores.
	SpearmanMean  float64 `json:"spearman_mean,omitempty" table:"ρ mean"`
	SpearmanWorst float64 `json:"spearman_worst,omitempty" table:"ρ worst"`
}

// QualityResult is the rows of RunQuality and their checks.
type QualityResult struct {
	Rows   []QualityRow   `json:"rows"`
	Checks []report.Check `json:"checks,omitempty"`
}

// Published is a published MTEB figure: nDCG@10 on a dataset's test split.
type Published struct {
	NDCG10 float64
	Source string
}

// PublishedMTEB holds the published SciFact nDCG@10 of the real models,
// keyed by model folder name and dataset (see /work/prompts/mteb.md's
// sources, repeated in each check's detail).
var PublishedMTEB = map[string]map[string]Published{
	"all-minilm-l6-v2":  {"scifact": {0.64508, "embeddings-benchmark/mtebpaper results/all-MiniLM-L6-v2/SciFact.json @28debbe5 (mteb 0.0.2)"}},
	"bge-small-en-v1.5": {"scifact": {0.71275, "BAAI/bge-small-en-v1.5 model card model-index \"MTEB SciFact\" (official re-run 0.71273, mteb 1.20.0)"}},
	"e5-small-v2":       {"scifact": {0.68854, "intfloat/e5-small-v2 model card model-index \"MTEB SciFact\""}},
}

// fp32Of is the float32 original of an int8 model ("x-q", an int8
// export, or "x-int8", hybrank's quantization of x: a folder written by
// bench models --quantize int8, or Int8's row → "x"), or "".
func fp32Of(model string) string {
	for _, suffix := range []string{"-q", "-int8"} {
		if base, ok := strings.CutSuffix(model, suffix); ok {
			return base
		}
	}
	return ""
}

// RunQuality embeds and ranks every dataset with every model.
func RunQuality(ctx context.Context, cfg QualityConfig) (QualityResult, error) {
	var res QualityResult
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	var peer *peers.Runner
	if cfg.Peers.Enabled {
		var err error
		if peer, err = peers.New(cfg.Peers); err != nil {
			return res, fmt.Errorf("dense: %w", err)
		}
	}
	sets := make([]*eval.Dataset, len(cfg.Datasets))
	for i, d := range cfg.Datasets {
		ds, err := eval.LoadBEIR(d)
		if err != nil {
			return res, err
		}
		sets[i] = ds
	}
	type run struct{ dir, quant, name string }
	var runs []run
	names := map[string]bool{}
	for _, dir := range cfg.Models {
		quants := []string{""}
		if cfg.Int8 && fp32Of(modelName(dir)) == "" {
			quants = append(quants, models.QuantizeInt8)
		}
		for _, q := range quants {
			r := run{dir, q, modelName(dir)}
			if q != "" {
				r.name += "-" + q
			}
			if names[r.name] {
				return res, fmt.Errorf("%w: dense: two models named %s (rows are named by folder, and --int8 adds <model>-int8)", bench.ErrBadOption, r.name)
			}
			names[r.name] = true
			runs = append(runs, r)
		}
	}
	// The vectors of the int8 models and their float32 originals, kept for
	// the score agreement.
	vecs := map[[2]string]vectors{} // by model and dataset
	keep := func(name string) bool {
		f := fp32Of(name)
		if f != "" {
			return names[f]
		}
		for n := range names {
			if fp32Of(n) == name {
				return true
			}
		}
		return false
	}
	for _, r := range runs {
		rows, err := runModel(ctx, cfg, r.dir, r.quant, sets, peer, func(ds string, v vectors) {
			if keep(r.name) {
				vecs[[2]string{r.name, ds}] = v
			}
		})
		if err != nil {
			return res, err
		}
		res.Rows = append(res.Rows, rows...)
	}
	for i, r := range res.Rows {
		fp := fp32Of(r.Model)
		if fp == "" || r.Impl != implHybrank || r.Kind != kindFlat {
			continue
		}
		if a, ok := vecs[[2]string{fp, r.Dataset}]; ok {
			res.Rows[i].SpearmanMean, res.Rows[i].SpearmanWorst = scoreAgreement(a, vecs[[2]string{r.Model, r.Dataset}], agreementK)
		}
	}
	res.Checks = cfg.Targets.Check(res.Rows)
	return res, nil
}

// agreementK is the list length of the int8 score agreement: a
// reranker's candidate list, as bench rerank --int8 correlates (BM25 top
// 32 there).
const agreementK = 32

// vectors is one model's vectors of one dataset.
type vectors struct{ docs, queries [][]float32 }

// scoreAgreement returns the mean and the worst, over the queries, of the
// Spearman correlation between the cosine scores of a (float32) and b
// (int8) over a's exact top k documents of the query (ties in document
// order).
func scoreAgreement(a, b vectors, k int) (mean, worst float64) {
	var agree measure.Agreement
	all := make([]float32, len(a.docs))
	top := make([]int, len(a.docs))
	for qi, q := range a.queries {
		for d, v := range a.docs {
			all[d], top[d] = float32(simd.Cosine(q, v)), d
		}
		slices.SortStableFunc(top, func(x, y int) int { return cmp.Compare(all[y], all[x]) })
		n := min(k, len(top))
		sa, sb := make([]float32, n), make([]float32, n)
		for j, d := range top[:n] {
			sa[j], sb[j] = all[d], float32(simd.Cosine(b.queries[qi], b.docs[d]))
		}
		agree.Add(sa, sb)
	}
	return agree.Mean(), agree.Worst()
}

// modelName is a model directory's row name: its folder's base name.
func modelName(dir string) string { return filepath.Base(filepath.Clean(dir)) }

// runModel loads one embedder (quantized as quant: "" or int8) and
// measures it on every dataset, handing each dataset's vectors to got.
func runModel(ctx context.Context, cfg QualityConfig, dir, quant string, sets []*eval.Dataset, peer *peers.Runner, got func(dataset string, v vectors)) (_ []QualityRow, err error) {
	md, err := models.OpenModelDir(dir)
	if err != nil {
		return nil, err
	}
	mc := models.DefaultEmbedderConfig()
	mc.Dir, mc.Provider = dir, cfg.Provider
	name := modelName(dir)
	if quant != "" {
		mc.Quantize, mc.QuantizeCache = quant, cfg.Int8Cache
		name += "-" + quant
	}
	if cfg.Threads > 0 {
		mc.IntraOpThreads = cfg.Threads
	}
	be, err := ort.NewBiEncoder(mc)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, be.Close()) }()
	var bar *measure.Progress
	ce, err := vcache.Wrap(be, mc, cfg.CacheDir, vcache.WithBatch(cfg.Batch), vcache.WithProgress(func(n int) { bar.Add(n) }))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, ce.Close()) }()
	var rows []QualityRow
	for _, ds := range sets {
		docs := make([]string, len(ds.Docs))
		for i, d := range ds.Docs {
			docs[i] = strings.TrimSpace(d.IndexText()) // MTEB: (title + " " + text).strip()
		}
		qs := make([]string, len(ds.Queries))
		for i, q := range ds.Queries {
			qs[i] = q.Text
		}
		start, before := time.Now(), ce.Stats()
		bar = measure.NewProgress(fmt.Sprintf("embed %s %s", name, ds.Name), len(docs)+len(qs), cfg.Progress)
		dv, err := ce.Embed(ctx, models.InputDocument, docs)
		if err != nil {
			return nil, err
		}
		qv, err := ce.Embed(ctx, models.InputQuery, qs)
		if err != nil {
			return nil, err
		}
		bar.Done()
		if len(dv) == 0 || len(qv) == 0 {
			return nil, fmt.Errorf("%w: dense: %s: no documents or queries", bench.ErrBadOption, ds.Name)
		}
		embedded := ce.Stats().Misses - before.Misses
		base := QualityRow{Model: name, RealWeights: modeldir.RealWeights(dir), Dataset: ds.Name,
			Docs: len(docs), Queries: len(qs), Dim: len(dv[0]), MaxLen: md.SequenceLength(mc), Cached: embedded == 0}
		if embedded > 0 {
			el := time.Since(start).Seconds()
			base.EmbedS = measure.Round(el, 1)
			base.DocsPerS = measure.Round(float64(embedded)/el, 1)
		}
		rs, err := rankAll(ctx, cfg, base, ds, dv, qv, peer)
		if err != nil {
			return nil, fmt.Errorf("dense: %s on %s: %w", name, ds.Name, err)
		}
		for _, r := range rs {
			report.Log(cfg.Log, r)
		}
		rows = append(rows, rs...)
		got(ds.Name, vectors{docs: dv, queries: qv})
	}
	return rows, nil
}

// rankAll ranks the queries by exact cosine and by the HNSW graph (and
// faiss's) and scores each ranking.
func rankAll(ctx context.Context, cfg QualityConfig, base QualityRow, ds *eval.Dataset, dv, qv [][]float32, peer *peers.Runner) ([]QualityRow, error) {
	dc := dense.DefaultConfig(len(dv[0]))
	dc.FlatThreshold = 0 // Search walks the graph even on small corpora
	ix, err := dense.New(dc)
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	for i, v := range dv {
		if err := ix.Add(dense.Item{ID: ds.Docs[i].ID, Vector: v}); err != nil {
			return nil, err
		}
	}
	score := func(r QualityRow, run eval.Run, lat []time.Duration) QualityRow {
		s := eval.Evaluate(ds.Qrels, run, cfg.Eval)
		r.NDCG10, r.Recall100, r.MRR10 = s.NDCG10, s.Recall100, s.MRR10 // unrounded: the checks compare them
		if lat != nil {
			r.QPS = withLatency(Row{}, lat).QPS
		}
		return r
	}
	search := func(exact bool) (eval.Run, []time.Duration, error) {
		run := eval.Run{}
		lat, err := timeQueries(ctx, qv, func(i int, q []float32) error {
			var hits []dense.Hit
			var err error
			if exact {
				hits, err = ix.SearchExact(ctx, q, cfg.TopK, nil)
			} else {
				hits, err = ix.Search(ctx, q, cfg.TopK, nil)
			}
			run[ds.Queries[i].ID] = ids(hits)
			return err
		})
		return run, lat, err
	}
	var rows []QualityRow
	for _, exact := range []bool{true, false} {
		run, lat, err := search(exact)
		if err != nil {
			return nil, err
		}
		r := base
		r.Impl, r.Kind = implHybrank, kindFlat
		if !exact {
			r.Kind, r.M, r.EfSearch = kindHNSW, dc.M, dc.EfSearch
		}
		rows = append(rows, score(r, run, lat))
	}
	if peer == nil {
		return rows, nil
	}
	out, err := peer.FaissHNSW(ctx, peers.FaissArgs{Base: dv, Queries: qv, Normalize: true,
		M: dc.M, EfConstruction: dc.EfConstruction, Efs: []int{dc.EfSearch}, K: cfg.TopK, Rounds: 1})
	if err != nil {
		return nil, fmt.Errorf("faiss: %w", err)
	}
	for _, fr := range out.Rows {
		run := eval.Run{}
		for i, nn := range fr.IDs {
			if i >= len(ds.Queries) {
				return nil, fmt.Errorf("%w: faiss returned %d result lists for %d queries", bench.ErrBadOption, len(fr.IDs), len(ds.Queries))
			}
			got := []string{}
			for _, id := range nn {
				if id >= 0 && id < int64(len(ds.Docs)) {
					got = append(got, ds.Docs[id].ID)
				}
			}
			run[ds.Queries[i].ID] = got
		}
		r := base
		r.Impl, r.Version, r.Kind, r.M, r.EfSearch = "faiss", out.Version, kindHNSW, dc.M, fr.Ef
		r = score(r, run, nil)
		r.QPS = measure.Round(fr.QPS, 1)
		rows = append(rows, r)
	}
	return rows, nil
}

// Check compares each model's exact scifact-style rows with the published
// figure, and each int8 model with its float32 original on the same data.
func (t QualityTargets) Check(rows []QualityRow) []report.Check {
	flat := map[[2]string]float64{}
	for _, r := range rows {
		if r.Impl == implHybrank && r.Kind == kindFlat {
			flat[[2]string{r.Model, r.Dataset}] = r.NDCG10
		}
	}
	var cs []report.Check
	for _, r := range rows {
		if r.Impl != implHybrank || r.Kind != kindFlat {
			continue
		}
		if p, ok := PublishedMTEB[r.Model][r.Dataset]; ok {
			d := math.Abs(r.NDCG10 - p.NDCG10)
			cs = append(cs, report.AtMost(fmt.Sprintf("%s %s |nDCG@10 − MTEB|", r.Model, r.Dataset), d, t.MaxDelta,
				fmt.Sprintf("ours %.5f, published %.5f (%s)", r.NDCG10, p.NDCG10, p.Source)))
		}
		fp := fp32Of(r.Model)
		if fp == "" {
			continue
		}
		label := fmt.Sprintf("%s %s |nDCG@10 − %s|", r.Model, r.Dataset, fp)
		if v, ok := flat[[2]string{fp, r.Dataset}]; ok {
			cs = append(cs, report.AtMost(label, math.Abs(r.NDCG10-v), t.MaxInt8Delta,
				fmt.Sprintf("int8 %.5f, float32 %.5f (no published int8 figure)", r.NDCG10, v)))
			if r.SpearmanMean != 0 {
				cs = append(cs, report.Inform(fmt.Sprintf("%s %s: worst per-query Spearman of cosine scores vs %s over its exact top %d", r.Model, r.Dataset, fp, agreementK), r.SpearmanWorst,
					fmt.Sprintf("mean %.4f", r.SpearmanMean)))
			}
		} else {
			cs = append(cs, report.Inform(label, r.NDCG10, "float32 original not in this run; no published int8 figure"))
		}
	}
	return cs
}

// QualityReport renders res for bench/results/dense_real.md.
func QualityReport(cfg QualityConfig, res QualityResult, command string) report.Report {
	dc := dense.DefaultConfig(384)
	rep := report.Report{
		Title:   "Dense retrieval quality of real embedders on BEIR datasets",
		Command: command,
		Checks:  res.Checks,
		Notes: []string{
			"Corpus texts are (title + \" \" + text).strip() embedded as documents, queries embedded as queries, each with the model directory's sentence-transformers prompts, pooling, normalisation and max_seq_length (models.OpenModelDir; max_len column). Identical query and document ids are kept (MTEB's ignore_identical_ids=False) unless the config says otherwise.",
			fmt.Sprintf("kind=flat: exact cosine top-%d (SearchExact); kind=hnsw: the dense index's graph at its defaults (M=%d, EfConstruction=%d, EfSearch=%d); impl=faiss: faiss-cpu IndexHNSWFlat with the same M, efConstruction and efSearch on the same normalised vectors. nDCG@10, Recall@100 (R@100) and MRR@10 by bench/eval (trec_eval conventions). QPS: one goroutine, one query per call.", cfg.TopK, dc.M, dc.EfConstruction, dc.EfSearch),
			"embed_s: wall time to embed corpus and queries in this run (0 with cached=true: every vector came from the cache, bench/vcache, keyed by the ONNX file's sha256, the resolved pooling, normalisation and prompts, the length and each text's sha256). docs/s counts the texts embedded in this run, corpus and queries together, in order of length.",
			"real_weights=true: pretrained weights (langchain4j ONNX exports from make models; -q = their int8 dynamic quantization; -int8 = the float32 model quantized by hybrank's onnx/quantize: per-output-channel symmetric weights (8-bit where the CPU sums in 32 bits: VNNI, AMX; else 7-bit) in DynamicQuantizeMatMul, activations quantized on every call, per token in 16-bit codes by hybrank's QuantMatMul where the CPU has AMX-INT8 (models.Config.Int8ActivationBits), else per tensor by the runtime; ρ mean / ρ worst on an int8 model's flat row: per query, the Spearman correlation of its cosine scores with its float32 original's over the float32 model's exact top 32, a reranker's candidate list). Published MTEB SciFact figures and sources are in each check's detail.",
		},
		Config:  cfg,
		Columns: report.Columns(QualityRow{}),
		Rows:    report.Rows(res.Rows),
	}
	return rep
}
