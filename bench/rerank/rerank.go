package rerank

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/lexical"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/peers"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/throughput"
	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/models"
)

// Config configures `bench rerank`: cross-encoders on real-length pairs
// (BM25 candidates of real queries) beside the peer, then on the synthetic
// shapes of the embedded throughput.Config (its Spec once, or its Sweep).
// Kind must be models.KindCrossEncoder. Safe to copy.
type Config struct {
	throughput.Config
	// Real are the real-length pairs; Real.Data "" skips them.
	Real RealPairs `json:"real"`
	// Synthetic runs the synthetic shapes (rows after the real ones).
	Synthetic bool `json:"synthetic"`
	// Peers scores the real pairs with ONNX Runtime's Python package and
	// HF tokenizers (make peers) on the same ONNX file, with the same
	// threads, at every PeerBatches size, right after hybrank. Off by
	// default.
	Peers       peers.Config `json:"peers"`
	PeerBatches []int        `json:"peer_batches"`
	// Peer is which peer runs: ONNX Runtime's Python package (the
	// default; Peers.Dir's make peers install) or PyTorch (the
	// interpreter's own packages, on PeerDevice in PeerDType; "" is cuda
	// and float16), the GPU peer.
	Peer       peers.RerankPeer `json:"peer,omitempty"`
	PeerDevice string           `json:"peer_device,omitempty"`
	PeerDType  string           `json:"peer_dtype,omitempty"`
	// PeerRounds is the peer's timed passes over all pairs per batch size
	// (the fastest is reported); hybrank's row is one timed pass or more.
	PeerRounds int `json:"peer_rounds"`
	// Targets are the checks of hybrank against the peer.
	Targets Targets `json:"targets"`
	// Batching compares the default batching with fixed token caps
	// (Enabled: real pairs needed).
	Batching BatchingCheck `json:"batching"`
	// Quant measures each real-pair profile again with int8 or float16
	// weights and compares speed and ranking with float32 (Enabled: real
	// pairs needed).
	Quant QuantCheck `json:"quant"`
}

// RealPairs selects real-length pairs: the BM25 top-TopK documents
// (lexical.TopK) of the first Queries judged queries of a BEIR dataset,
// each query scored against its own candidates in one call, documents
// whole (title + " " + text) up to the model's 512 tokens.
type RealPairs struct {
	// Data is the BEIR dataset folder; "" means no real pairs.
	Data string `json:"data,omitempty"`
	// Queries is how many judged queries, in file order (0 = all).
	Queries int `json:"queries"`
	// TopK is the number of candidates per query.
	TopK int `json:"top_k"`
	// Profiles are the models run on them; empty means those of the
	// synthetic part (Sweep.Profiles, else Profile).
	Profiles []string `json:"profiles,omitempty"`
}

// DefaultRealPairs is 20 queries × BM25 top 32 of scifact when the dataset
// is present (internal/artifacts), for fast, balanced and accurate.
func DefaultRealPairs() RealPairs {
	rp := RealPairs{Queries: 20, TopK: 32}
	for _, p := range models.Profiles() {
		if p.Kind == models.KindCrossEncoder {
			rp.Profiles = append(rp.Profiles, p.Name)
		}
	}
	if d := artifacts.Dataset("scifact"); fileExists(filepath.Join(d, "corpus.jsonl")) {
		rp.Data = d
	}
	return rp
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Targets are what the real-pair rows are checked against.
type Targets struct {
	// MaxScoreDiff bounds max |hybrank − peer| score over the real pairs,
	// per profile and peer batch size: the two run the same ONNX file, so
	// only tokenization (and float summation order) may differ (1e-3),
	// and at most MaxScoreDiffOfRange of hybrank's score range (1 %): a
	// generated model's logits span about 0.001, where an absolute bound
	// alone would pass a peer that orders the pairs differently.
	MaxScoreDiff        float64 `json:"max_score_diff"`
	MaxScoreDiffOfRange float64 `json:"max_score_diff_of_range"`
	// MinPeerSpeedup bounds from below hybrank's pairs/s (default
	// batching) over the peer's at each of its batch sizes (the issue's
	// 1.5×); 0 reports the ratio without a check.
	MinPeerSpeedup float64 `json:"min_peer_speedup"`
	// MinEfficiency bounds from below the effective GFLOP/s of
	// EfficiencyProfile on the real pairs over the MatMul peak measured
	// right after it (the 70 %); 0 skips the check.
	MinEfficiency     float64 `json:"min_efficiency"`
	EfficiencyProfile string  `json:"efficiency_profile,omitempty"`
}

// DefaultTargets is a score difference of at most 1e-3 and 1 % of the
// score range, hybrank at 1.5× the peer, and the balanced
// profile at 70 % of the measured MatMul peak on real pairs.
func DefaultTargets() Targets {
	return Targets{MaxScoreDiff: 1e-3, MaxScoreDiffOfRange: 0.01, MinPeerSpeedup: 1.5, MinEfficiency: 0.7, EfficiencyProfile: models.ProfileBalanced}
}

// checkAll is every check Targets makes: against the peer and on the
// efficiency of the rows.
func (t Targets) checkAll(rows []throughput.Row, peers []PeerRow) []report.Check {
	return append(t.Check(peers), t.CheckEfficiency(rows)...)
}

// CheckEfficiency turns the real-pair rows of t.EfficiencyProfile (default
// batching) into PASS/FAIL lines on their efficiency.
func (t Targets) CheckEfficiency(rows []throughput.Row) []report.Check {
	if t.MinEfficiency <= 0 {
		return nil
	}
	var cs []report.Check
	for _, r := range rows {
		// Real-pair rows are those with a length distribution.
		// The float32 row only: an int8 row's "GFLOP/s" counts float32
		// FLOPs done in integer arithmetic, not comparable with the
		// float32 MatMul peak.
		if r.Profile != t.EfficiencyProfile || r.LenMax == 0 || r.Batching != models.BatchingCost || r.PeakGFLOPs <= 0 || r.Quantize != "" {
			continue
		}
		// The ratio of the row's figures, not its rounded Efficiency.
		cs = append(cs, report.AtLeast(fmt.Sprintf("%s on %s: effective GFLOP/s / MatMul peak", r.Profile, r.Data), r.GFLOPs/r.PeakGFLOPs, t.MinEfficiency,
			fmt.Sprintf("%.1f effective GFLOP/s (real tokens), peak %.1f GFLOP/s (n×n float32 MatMul, same runtime and %d threads, measured right after)", r.GFLOPs, r.PeakGFLOPs, r.Threads)))
	}
	return cs
}

// Check turns each peer row into a PASS/FAIL line on its score difference
// and an INFO line on the speed ratio.
func (t Targets) Check(ps []PeerRow) []report.Check {
	var cs []report.Check
	for _, p := range ps {
		name := fmt.Sprintf("%s batch %d", p.Profile, p.BatchPairs)
		diffName := name + ": max |hybrank − " + p.Impl + "| score"
		diffDetail := fmt.Sprintf("over %d pairs (%s), same weights; hybrank's scores span %.3g", p.Pairs, p.Data, p.ScoreRange)
		bound := t.MaxScoreDiff
		if t.MaxScoreDiffOfRange > 0 && p.ScoreRange > 0 {
			bound = min(bound, t.MaxScoreDiffOfRange*p.ScoreRange)
			diffDetail += fmt.Sprintf(", the bound is the least of %.3g and %g of that", t.MaxScoreDiff, t.MaxScoreDiffOfRange)
		}
		switch {
		case p.Mismatch != "":
			cs = append(cs, report.Inform(diffName, p.MaxAbsDiff, diffDetail+"; not checked: "+p.Mismatch))
		case p.DType == "" || p.DType == "float32":
			cs = append(cs, report.AtMost(diffName, p.MaxAbsDiff, bound, diffDetail))
		default:
			// Reduced precision differs by design: reported, not checked.
			cs = append(cs, report.Inform(diffName, p.MaxAbsDiff, diffDetail+"; the peer computes in "+p.DType))
		}
		if p.NonFinite > 0 {
			cs = append(cs, report.AtMost(name+": pairs with a NaN or infinite score (hybrank's or "+p.Impl+"'s)", float64(p.NonFinite), 0, fmt.Sprintf("of %d pairs", p.Pairs)))
		}
		if p.PairsPerS > 0 {
			detail := fmt.Sprintf("%.1f vs %.1f pairs/s, same pairs, same run", p.HybrankSpeedup*p.PairsPerS, p.PairsPerS)
			if p.Mismatch != "" {
				cs = append(cs, report.Inform(name+": pairs/s hybrank / "+p.Impl, p.HybrankSpeedup, detail+"; not checked: "+p.Mismatch))
				continue
			}
			if t.MinPeerSpeedup > 0 {
				cs = append(cs, report.AtLeast(name+": pairs/s hybrank / "+p.Impl, p.HybrankSpeedup, t.MinPeerSpeedup, detail))
			} else {
				cs = append(cs, report.Inform(name+": pairs/s hybrank / "+p.Impl, p.HybrankSpeedup, detail))
			}
		}
	}
	return cs
}

// DefaultConfig is the real pairs of DefaultRealPairs for every
// cross-encoder profile, then one synthetic run of the balanced profile
// (64 pairs of 128 document tokens per call, batches of 16,384 tokens,
// one thread per core); peers off, batches 16 and 32 when on.
func DefaultConfig() Config {
	return Config{
		Config:      throughput.DefaultConfig(models.KindCrossEncoder),
		Real:        DefaultRealPairs(),
		Synthetic:   true,
		Peers:       peers.DefaultConfig(),
		PeerBatches: []int{16, 32},
		PeerRounds:  1,
		Targets:     DefaultTargets(),
		Batching:    DefaultBatchingCheck(),
		Quant:       DefaultQuantCheck(),
	}
}

// DefaultSweep is fast, balanced and accurate × batches of 1, 4, 16, 64 ×
// one and two threads × 128 and 256 document tokens.
func DefaultSweep() throughput.Sweep { return throughput.DefaultSweep(models.KindCrossEncoder) }

// Validate reports the first unusable option.
func (c Config) Validate() error {
	if err := c.Config.Validate(); err != nil {
		return err
	}
	if c.Kind != models.KindCrossEncoder {
		return fmt.Errorf("%w: this benchmark measures %s models, not %q", bench.ErrBadOption, models.KindCrossEncoder, c.Kind)
	}
	if c.Real.Data == "" && !c.Synthetic {
		return fmt.Errorf("%w: rerank: neither real pairs nor synthetic shapes", bench.ErrBadOption)
	}
	if c.Real.Data != "" {
		if c.Real.Queries < 0 || c.Real.TopK < 1 {
			return fmt.Errorf("%w: rerank: real queries %d, top-k %d", bench.ErrBadOption, c.Real.Queries, c.Real.TopK)
		}
		for _, p := range c.Real.Profiles {
			prof, err := models.LookupProfile(p)
			switch {
			case err != nil && c.ModelDir == "":
				return fmt.Errorf("%w: rerank: %w", bench.ErrBadOption, err)
			case err == nil && prof.Kind != models.KindCrossEncoder:
				return fmt.Errorf("%w: rerank: profile %s is a %s model", bench.ErrBadOption, p, prof.Kind)
			}
		}
	}
	if c.Peer != "" && !c.Peer.Valid() {
		return fmt.Errorf("%w: rerank: peer %q (want %s or %s)", bench.ErrBadOption, c.Peer, peers.PeerORT, peers.PeerTorch)
	}
	if c.Peers.Enabled {
		if len(c.PeerBatches) == 0 || c.PeerRounds < 1 {
			return fmt.Errorf("%w: rerank: peer batches %v, rounds %d", bench.ErrBadOption, c.PeerBatches, c.PeerRounds)
		}
		for _, b := range c.PeerBatches {
			if b < 1 {
				return fmt.Errorf("%w: rerank: peer batch %d", bench.ErrBadOption, b)
			}
		}
	}
	if err := c.Batching.validate(); err != nil {
		return err
	}
	if c.Batching.Enabled && c.Real.Data == "" {
		return fmt.Errorf("%w: rerank: the batching check needs real pairs (a dataset)", bench.ErrBadOption)
	}
	if err := c.Quant.validate(); err != nil {
		return err
	}
	if c.Quant.Enabled && c.Quantize != "" {
		return fmt.Errorf("%w: rerank: the %s check compares with the model as it is; it cannot run with every model loaded as %s", bench.ErrBadOption, c.Quant.Type, c.Quantize)
	}
	if c.Quant.Enabled && c.Real.Data == "" {
		return fmt.Errorf("%w: rerank: the %s check needs real pairs (a dataset)", bench.ErrBadOption, c.Quant.Type)
	}
	if !(c.Targets.MaxScoreDiff >= 0) {
		return fmt.Errorf("%w: rerank: max score diff %v", bench.ErrBadOption, c.Targets.MaxScoreDiff)
	}
	return c.Peers.Validate()
}

// realProfiles are the profiles run on the real pairs.
func (c Config) realProfiles() []string {
	if len(c.Real.Profiles) > 0 {
		return c.Real.Profiles
	}
	if len(c.Sweep.Profiles) > 0 {
		return c.Sweep.Profiles
	}
	return []string{c.Profile}
}

// PeerRow is the peer's measurement of one profile at one batch size on
// the real pairs: a line of rerank.md after hybrank's row of that
// profile.
type PeerRow struct {
	// Impl is the peer ("onnxruntime-python", or "torch" and its dtype);
	// Version its release, Provider the device it ran on.
	Impl     string `json:"impl" table:""`
	Version  string `json:"version"`
	Profile  string `json:"profile" table:""`
	Kind     string `json:"kind"`
	Provider string `json:"provider" table:""`
	// DType is the torch peer's arithmetic ("" for ONNX Runtime: the
	// ONNX file's float32).
	DType   string `json:"dtype,omitempty"`
	Threads int    `json:"threads" table:""`
	// BatchPairs is the peer's fixed batch size (pairs in input order,
	// padded to the batch's longest).
	BatchPairs   int     `json:"batch_pairs" table:""`
	SeqLen       float64 `json:"seq_len" table:""`
	PaddedTokens int     `json:"padded_tokens"`
	Pairs        int     `json:"pairs"`
	PairsPerS    float64 `json:"pairs_per_s" table:""`
	TokensPerS   float64 `json:"tokens_per_s" table:""`
	// GFLOPs is effective, as hybrank's rows (real tokens only).
	GFLOPs float64 `json:"gflops" table:""`
	// HybrankSpeedup is hybrank's pairs/s on the same pairs in the same
	// run / this row's.
	HybrankSpeedup float64 `json:"hybrank_speedup" table:"hybrank ×"`
	// MaxAbsDiff is max |hybrank − peer| score over the pairs; ScoreRange
	// hybrank's max − min score over them, the scale to read it against
	// (generated models' logits all lie close together).
	MaxAbsDiff float64 `json:"max_abs_diff" table:"max |Δ|"`
	ScoreRange float64 `json:"score_range"`
	// NonFinite counts the pairs where either side's score is NaN or
	// infinite (left out of MaxAbsDiff).
	NonFinite int `json:"non_finite,omitempty"`
	// Mismatch says how hybrank's row ran other work than the peer
	// (quantized weights against the file's float32, another device,
	// concurrent sessions against one); its checks then only inform.
	Mismatch    string `json:"mismatch,omitempty"`
	RealWeights bool   `json:"real_weights" table:""`
	Data        string `json:"data"`
}

// peerMismatch says how hybrank's row ours ran other work than the peer:
// on another device, with other weights or with concurrent sessions; ""
// when the two compare.
func peerMismatch(ours throughput.Row, peerProvider, peerDType string) string {
	var why []string
	if ours.Provider != peerProvider {
		why = append(why, fmt.Sprintf("hybrank ran on %s, the peer on %s", ours.Provider, peerProvider))
	}
	switch {
	case ours.Quantize == "" || ours.Quantize == peerDType || ours.Quantize == models.QuantizeFP16 && peerDType == "float16":
	default:
		why = append(why, fmt.Sprintf("hybrank ran %s weights, the peer %s", ours.Quantize, cmp.Or(peerDType, "the file's float32")))
	}
	if ours.PoolSize > 1 {
		why = append(why, fmt.Sprintf("hybrank ran %d sessions at once, the peer one", ours.PoolSize))
	}
	return strings.Join(why, "; ")
}

// Result is hybrank's rows (the real pairs' first, one per profile, then
// the synthetic shapes'), the peer's rows, and Targets.Check of them.
type Result struct {
	Rows  []throughput.Row `json:"rows"`
	Peers []PeerRow        `json:"peers,omitempty"`
	// Quant compares each profile's quantized row (in Rows) with its
	// float32 row, when Config.Quant is enabled.
	Quant  []QuantRow     `json:"quant,omitempty"`
	Checks []report.Check `json:"checks,omitempty"`
}

// Run measures the real pairs (with the peer) and then the synthetic
// shapes of cfg.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	if cfg.Real.Data != "" {
		if err := runReal(ctx, cfg, &res); err != nil {
			return res, err
		}
	}
	if cfg.Synthetic {
		syn, err := throughput.RunKind(ctx, cfg.Config, models.KindCrossEncoder)
		res.Rows = append(res.Rows, syn.Rows...)
		if err != nil {
			return res, err
		}
	}
	res.Checks = cfg.Targets.checkAll(res.Rows, res.Peers)
	if cfg.Batching.Enabled {
		res.Checks = append(res.Checks, cfg.Batching.Check(res.Rows)...)
	}
	res.Checks = append(res.Checks, cfg.Quant.Check(res.Quant)...)
	return res, nil
}

// runReal builds the real pairs and measures every profile on them, each
// followed by the peer.
func runReal(ctx context.Context, cfg Config, res *Result) error {
	var peer *peers.Runner
	if cfg.Peers.Enabled {
		var err error
		if cfg.Peer == peers.PeerTorch {
			peer, err = peers.NewSystem(cfg.Peers)
		} else {
			peer, err = peers.New(cfg.Peers)
		}
		if err != nil {
			return fmt.Errorf("rerank: %w", err)
		}
	}
	ds, err := eval.LoadBEIR(cfg.Real.Data)
	if err != nil {
		return err
	}
	cands, err := lexical.TopK(ctx, ds, cfg.Real.Queries, cfg.Real.TopK)
	if err != nil {
		return err
	}
	var text throughput.Text
	var pairs []models.Pair
	for _, c := range cands {
		if len(c.Docs) == 0 {
			continue // nothing to rerank
		}
		docs := make([]string, len(c.Docs))
		for i, d := range c.Docs {
			docs[i] = d.IndexText()
			pairs = append(pairs, models.Pair{Query: c.Query.Text, Doc: docs[i]})
		}
		text.Queries = append(text.Queries, c.Query.Text)
		text.PerQuery = append(text.PerQuery, docs)
	}
	if len(pairs) == 0 {
		return fmt.Errorf("rerank: %s: no query has a BM25 candidate", ds.Name)
	}
	data := fmt.Sprintf("%s bm25 top-%d of %d queries", ds.Name, cfg.Real.TopK, len(text.Queries))
	r := modeldir.NewResolver(cfg.Models)
	defer r.Close()
	for _, p := range cfg.realProfiles() {
		dir, err := r.Dir(p, cfg.ModelDir)
		if err != nil {
			return err
		}
		row, scores, md, err := addReal(ctx, cfg, res, p, dir, data, text, pairs)
		if err != nil {
			return fmt.Errorf("rerank %s on %s: %w", p, ds.Name, err)
		}
		if cfg.Batching.Enabled {
			rows, err := batchingRows(ctx, cfg, p, dir, text, row)
			if err != nil {
				return fmt.Errorf("rerank %s batching: %w", p, err)
			}
			res.Rows = append(res.Rows, rows...)
		}
		if cfg.Quant.Enabled {
			if err := addQuant(ctx, cfg, res, p, dir, text, pairs, row, scores); err != nil {
				return fmt.Errorf("rerank %s %s: %w", p, cfg.Quant.Type, err)
			}
		}
		if peer == nil {
			continue
		}
		prs, err := runPeer(ctx, peer, cfg, row, md, pairs, scores)
		if err != nil {
			return fmt.Errorf("rerank %s on %s: %w", p, ds.Name, err)
		}
		for _, pr := range prs {
			res.Peers = append(res.Peers, pr)
			report.Log(cfg.Log, pr)
		}
	}
	if !cfg.Quant.Enabled {
		return nil
	}
	// The quantized check on trained encoders under a random head: named
	// by their directory, measured like a profile (its defaults are the
	// cross-encoder's), no peer.
	for _, dir := range cfg.Quant.Encoders {
		name := filepath.Base(filepath.Clean(dir))
		row, scores, _, err := addReal(ctx, cfg, res, name, dir, data, text, pairs)
		if err != nil {
			return fmt.Errorf("rerank %s on %s: %w", dir, ds.Name, err)
		}
		if err := addQuant(ctx, cfg, res, name, dir, text, pairs, row, scores); err != nil {
			return fmt.Errorf("rerank %s %s: %w", dir, cfg.Quant.Type, err)
		}
	}
	return nil
}

// addReal measures model dir (profile or name p) on the real pairs and
// adds its row, described as data, to res.
func addReal(ctx context.Context, cfg Config, res *Result, p, dir, data string, text throughput.Text, pairs []models.Pair) (throughput.Row, []float32, models.ModelDir, error) {
	row, scores, md, err := measureReal(ctx, cfg, p, dir, text, pairs)
	if err != nil {
		return row, nil, md, err
	}
	row.Data = data
	res.Rows = append(res.Rows, row)
	report.Log(cfg.Log, row)
	return row, scores, md, nil
}

// addQuant measures dir's quantized copy after its float32 row (scores in
// pair order) and adds the row and the comparison to res.
func addQuant(ctx context.Context, cfg Config, res *Result, p, dir string, text throughput.Text, pairs []models.Pair, fp32 throughput.Row, scores []float32) error {
	qrow, cmp, err := quantRow(ctx, cfg, p, dir, text, pairs, fp32, scores)
	if err != nil {
		return err
	}
	res.Rows, res.Quant = append(res.Rows, qrow), append(res.Quant, cmp)
	report.Log(cfg.Log, qrow)
	return nil
}

// measureReal measures profile p (directory dir) on the real pairs with
// the model's whole sequence length, and returns its row with the length
// distribution and its scores in pair order.
func measureReal(ctx context.Context, cfg Config, p, dir string, text throughput.Text, pairs []models.Pair) (throughput.Row, []float32, models.ModelDir, error) {
	md, err := models.OpenModelDir(dir)
	if err != nil {
		return throughput.Row{}, nil, md, err
	}
	s := realSpec(cfg, p, md)
	// Every query is timed at least once, so every pair has a score.
	s.MinCalls = max(s.MinCalls, len(text.Queries))
	row, byQuery, err := throughput.MeasureText(ctx, dir, s, models.KindCrossEncoder, text)
	if err != nil {
		return row, nil, md, err
	}
	scores := slices.Concat(byQuery...)
	if len(scores) != len(pairs) {
		return row, nil, md, fmt.Errorf("%d scores for %d pairs", len(scores), len(pairs))
	}
	tok, err := md.Tokenizer()
	if err != nil {
		return row, nil, md, err
	}
	// The lengths hybrank feeds the model: the query cut to half the
	// budget, then the document to the rest (package models/ort).
	lens := make([]int, len(pairs))
	for i, pr := range pairs {
		q := min(tok.CountTokens(pr.Query), models.MaxQueryTokens(s.MaxLength))
		lens[i] = min(q+tok.CountTokens(pr.Doc)+models.PairSpecialTokens, s.MaxLength)
	}
	// The effective work pair by pair: attention grows with the square of
	// the length, so the FLOPs at the mean length (the throughput row's)
	// undercount a spread of lengths (about 1 % on scifact's).
	shape := modeldir.Shape(md, models.KindCrossEncoder)
	var work float64
	for _, l := range lens {
		work += modeldir.ShapeFLOPs(shape, l, row.Narrowing)
	}
	row.SetWorkPerPair(work / float64(len(pairs)))
	slices.Sort(lens)
	row.LenP10, row.LenP50, row.LenP90, row.LenMax = measure.Percentile(lens, 10), measure.Percentile(lens, 50), measure.Percentile(lens, 90), lens[len(lens)-1]
	row.DocTokens, row.Pairs = 0, len(pairs)
	return row, scores, md, nil
}

// realSpec is the spec of profile p (model directory md) on the real
// pairs: the model's whole sequence length, TopK pairs per call.
func realSpec(cfg Config, p string, md models.ModelDir) throughput.Spec {
	s := cfg.Spec
	s.Profile, s.Data = p, ""
	s.MaxLength = models.MaxSupportedLength
	if mp := md.Config.MaxPositionEmbeddings; mp > 0 {
		s.MaxLength = min(s.MaxLength, mp)
	}
	s.Pairs = cfg.Real.TopK
	return s
}

// runPeer scores the pairs with the peer at every batch size and compares
// its scores and speed with ours, hybrank's row and scores.
func runPeer(ctx context.Context, peer *peers.Runner, cfg Config, ours throughput.Row, md models.ModelDir, pairs []models.Pair, scores []float32) ([]PeerRow, error) {
	maxLen := models.MaxSupportedLength
	if mp := md.Config.MaxPositionEmbeddings; mp > 0 {
		maxLen = min(maxLen, mp)
	}
	out, err := peer.Rerank(ctx, peers.RerankArgs{
		Peer: cfg.Peer, ModelDir: md.Dir, Pairs: pairs, Batches: cfg.PeerBatches, Threads: cfg.Threads, MaxLength: maxLen, Rounds: cfg.PeerRounds,
		Device: cfg.PeerDevice, DType: cfg.PeerDType,
	})
	if err != nil {
		return nil, err
	}
	impl, provider := string(out.Peer), cmp.Or(out.Device, "cpu")
	if out.DType != "" {
		impl += " " + out.DType
	}
	sigmoid := cfg.ModelConfig(md.Dir, models.KindCrossEncoder).Sigmoid
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range scores {
		if finite(v) {
			lo, hi = min(lo, float64(v)), max(hi, float64(v))
		}
	}
	span := max(0, hi-lo) // over the finite scores: a NaN is counted apart
	var rows []PeerRow
	mismatch := peerMismatch(ours, provider, out.DType)
	for _, o := range out.Rows {
		var diff float64
		nonFinite := 0
		for i, s := range o.Scores {
			want := float64(s)
			if sigmoid {
				want = models.Sigmoid(s)
			}
			if d := math.Abs(float64(scores[i]) - want); math.IsNaN(d) || math.IsInf(d, 0) {
				nonFinite++
			} else {
				diff = max(diff, d)
			}
		}
		seqLen := float64(o.Tokens) / float64(len(pairs))
		r := PeerRow{
			Impl: impl, Version: out.Version, Profile: ours.Profile, Kind: ours.Kind, Provider: provider, DType: out.DType, Threads: out.Threads,
			BatchPairs: o.Batch, SeqLen: measure.Round(seqLen, 1), PaddedTokens: o.PaddedTokens, Pairs: len(pairs),
			PairsPerS: measure.Round(o.PairsPerS, 2), MaxAbsDiff: measure.Round(diff, 7), ScoreRange: measure.Round(span, 7),
			NonFinite: nonFinite, Mismatch: mismatch, RealWeights: ours.RealWeights, Data: ours.Data,
		}
		if o.Seconds > 0 {
			r.TokensPerS = measure.Round(float64(o.Tokens)/o.Seconds, 0)
		}
		if ours.PairsPerS > 0 {
			// The same pairs: the same work per pair as hybrank's row.
			r.GFLOPs = measure.Round(ours.GFLOPs*o.PairsPerS/ours.PairsPerS, 2)
		}
		if o.PairsPerS > 0 {
			r.HybrankSpeedup = ours.PairsPerS / o.PairsPerS
		}
		rows = append(rows, r)
	}
	return rows, nil
}
