package tokenize

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// Config configures `bench tokenize`: our WordPiece tokenizer against
// Hugging Face's Rust tokenizers (through its Node addon) on the same
// (query, document) pairs.
type Config struct {
	// Data is a BEIR dataset folder; pairs are its queries × documents.
	Data string `json:"data"`
	// Pairs is the number of (query, document) pairs.
	Pairs int `json:"pairs"`
	// MaxLen is the truncation length, special tokens included.
	MaxLen int `json:"max_len"`
	// Truncation is "longest_first" or "only_second".
	Truncation string `json:"truncation"`
	// Tokenizer is a tokenizer.json or a vocab.txt (bert-base-uncased rules).
	Tokenizer string `json:"tokenizer"`
	// HFAddon is the folder of the HF tokenizers Node addon; "" skips HF.
	HFAddon string `json:"hf_addon"`
	// Node is the node binary.
	Node string `json:"node"`
	// Rounds is the number of timed passes; the best is reported.
	Rounds int `json:"rounds"`
	// DocsPerQuery groups pairs for the EncodePairs row (one query, many
	// documents, as in reranking).
	DocsPerQuery int `json:"docs_per_query"`
	// Targets are checked when HF was measured.
	Targets Targets `json:"targets"`
}

// Targets are what the tokenizer must reach against HF's.
type Targets struct {
	// MinParity is the least share of pairs whose ids and type ids equal
	// HF's (1: every pair; the tokenizer claims exact parity).
	MinParity float64 `json:"min_parity"`
}

// Validate reports an unusable target.
func (t Targets) Validate() error {
	if !(t.MinParity >= 0 && t.MinParity <= 1) {
		return fmt.Errorf("%w: tokenize: min parity %v outside [0, 1]", bench.ErrBadOption, t.MinParity)
	}
	return nil
}

// Check compares res with t: parity against MinParity, and the speed ratio
// for information.
func (t Targets) Check(res Result) []report.Check {
	if res.ParityTotal == 0 {
		return nil
	}
	return []report.Check{
		report.AtLeast("parity with HF tokenizers (identical ids and type ids)", float64(res.ParityEqual)/float64(res.ParityTotal), t.MinParity,
			fmt.Sprintf("%d / %d pairs", res.ParityEqual, res.ParityTotal)),
		report.Inform("speed ratio, ours EncodePair (cache on) over HF's faster mode", measure.Round(res.Ratio, 2), ""),
	}
}

// DefaultConfig returns 2,000 pairs at max length 512, LongestFirst,
// best of 3 rounds. Data, Tokenizer and HFAddon must be filled in.
func DefaultConfig() Config {
	return Config{Pairs: 2000, MaxLen: 512, Truncation: "longest_first", Node: "node", Rounds: 3, DocsPerQuery: 100,
		Targets: Targets{MinParity: 1}}
}

// Validate reports the first unusable option.
func (c Config) Validate() error {
	switch {
	case c.Data == "":
		return fmt.Errorf("%w: tokenize: Data (a BEIR folder) is required", bench.ErrBadOption)
	case c.Tokenizer == "":
		return fmt.Errorf("%w: tokenize: Tokenizer (tokenizer.json or vocab.txt) is required", bench.ErrBadOption)
	case c.Pairs < 1:
		return fmt.Errorf("%w: tokenize: Pairs %d must be positive", bench.ErrBadOption, c.Pairs)
	case c.MaxLen < 3:
		return fmt.Errorf("%w: tokenize: MaxLen %d must be at least 3", bench.ErrBadOption, c.MaxLen)
	case c.Rounds < 1:
		return fmt.Errorf("%w: tokenize: Rounds %d must be positive", bench.ErrBadOption, c.Rounds)
	case c.DocsPerQuery < 1:
		return fmt.Errorf("%w: tokenize: DocsPerQuery %d must be positive", bench.ErrBadOption, c.DocsPerQuery)
	}
	if _, err := wordpiece.ParseTruncation(c.Truncation); err != nil {
		return fmt.Errorf("%w: tokenize: %w", bench.ErrBadOption, err)
	}
	return c.Targets.Validate()
}

// Row is one measured implementation: a line of tokenize.md.
type Row struct {
	Impl        string  `json:"impl" table:""`
	Mode        string  `json:"mode" table:""`
	Threads     int     `json:"threads" table:""`
	PairsPerSec float64 `json:"pairs_per_s" table:"pairs/s"`
	TokensPerS  float64 `json:"tokens_per_s" table:"tokens/s"`
	Seconds     float64 `json:"best_round_s" table:"best round s"`
	Tokens      int     `json:"tokens" table:""`
	Note        string  `json:"note" table:""`
}

// Result is the outcome of Run.
type Result struct {
	Rows []Row `json:"rows"`
	// ParityEqual and ParityTotal count pairs whose ids and type ids are
	// identical between us and HF (0/0 when HF was skipped).
	ParityEqual int `json:"parity_equal"`
	ParityTotal int `json:"parity_total"`
	// Ratio is our single-goroutine EncodePair pairs/s over HF's best
	// single-thread pairs/s (0 when HF was skipped).
	Ratio float64 `json:"ratio_vs_hf"`
	// HFReference names the HF row that parity and Ratio are against: the
	// in-process library when the binary has it, else the Node addon.
	HFReference string `json:"hf_reference,omitempty"`
	// HFInProcessSkipped says why the in-process HF row is missing.
	HFInProcessSkipped string `json:"hf_in_process_skipped,omitempty"`
	// HFSkipped says why HF was not measured, if it was not.
	HFSkipped string `json:"hf_skipped,omitempty"`
	// Checks are cfg.Targets against the parity and the ratio (none when
	// HF was skipped).
	Checks []report.Check `json:"checks,omitempty"`
}

// load builds the tokenizer of cfg.
func load(cfg Config, cacheSize int) (*wordpiece.Tokenizer, error) {
	if strings.HasSuffix(cfg.Tokenizer, ".json") {
		return wordpiece.LoadTokenizerJSON(cfg.Tokenizer, cacheSize)
	}
	wc := wordpiece.DefaultConfig()
	wc.WordCacheSize = cacheSize
	return wordpiece.LoadVocab(cfg.Tokenizer, wc)
}

// makePairs builds cfg.Pairs pairs: query i mod Q with a document picked
// by a fixed stride, so runs are repeatable; pairs of one query are
// consecutive (cfg.DocsPerQuery of them) for the EncodePairs row.
func makePairs(cfg Config) ([][2]string, error) {
	ds, err := eval.LoadBEIR(cfg.Data)
	if err != nil {
		return nil, err
	}
	if len(ds.Queries) == 0 || len(ds.Docs) == 0 {
		return nil, fmt.Errorf("tokenize: %s has no queries or documents", cfg.Data)
	}
	pairs := make([][2]string, cfg.Pairs)
	for i := range pairs {
		q := ds.Queries[(i/cfg.DocsPerQuery)%len(ds.Queries)]
		d := ds.Docs[(i*7919)%len(ds.Docs)]
		pairs[i] = [2]string{q.Text, d.IndexText()}
	}
	return pairs, nil
}

// Run measures our tokenizer (single goroutine: EncodePair per pair, with
// and without the word cache, and EncodePairs per query group) and, when
// the addon and node are available, HF's (single thread, inside node,
// timed around the encode calls only), then checks cfg.Targets.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	pairs, err := makePairs(cfg)
	if err != nil {
		return res, err
	}
	ours, err := timeOurs(ctx, cfg, pairs, &res)
	if err != nil {
		return res, err
	}
	// The reference: HF tokenizers linked in process (build tag
	// hftokenizers); the Node addon below is kept as a second row.
	strat, _ := wordpiece.ParseTruncation(cfg.Truncation)
	row, equal, skip, err := tokenizeHFRust(ctx, cfg, strat, pairs, ours)
	if err != nil {
		return res, err
	}
	if skip == "" {
		res.Rows = append(res.Rows, row)
		res.ParityEqual, res.ParityTotal = equal, len(pairs)
		res.Ratio = res.Rows[0].PairsPerSec / row.PairsPerSec
		res.HFReference = row.Impl
	} else {
		res.HFInProcessSkipped = skip
	}
	if cfg.HFAddon == "" {
		if skip != "" {
			res.HFSkipped = "no HF addon given and " + skip
			return res, nil
		}
		res.Checks = cfg.Targets.Check(res)
		return res, nil
	}
	hf, err := runHF(ctx, cfg, pairs)
	if err != nil {
		return res, err
	}
	for _, m := range hf.Modes {
		res.Rows = append(res.Rows, newRow("HF tokenizers "+hf.Version+" (Rust, via Node)", m.Mode, len(pairs), m.Tokens,
			time.Duration(m.Seconds*float64(time.Second)), m.Note))
	}
	if res.HFReference == "" { // no in-process HF: the Node addon is the reference
		for i, g := range hf.Pairs {
			res.ParityTotal++
			if same(ours[i], g.IDs, g.Types) {
				res.ParityEqual++
			}
		}
		bestHF := 0.0
		for _, r := range res.Rows[len(res.Rows)-len(hf.Modes):] {
			bestHF = max(bestHF, r.PairsPerSec)
		}
		if bestHF > 0 {
			res.Ratio = res.Rows[0].PairsPerSec / bestHF
		}
		res.HFReference = "HF tokenizers " + hf.Version + " (Rust, via Node)"
	}
	res.Checks = cfg.Targets.Check(res)
	return res, nil
}

// timeOurs adds our rows to res: EncodePair with the word cache, then
// EncodePairs per query group, then EncodePair without the cache. It
// returns the cached run's encodings for the parity check.
func timeOurs(ctx context.Context, cfg Config, pairs [][2]string, res *Result) ([]wordpiece.Encoding, error) {
	strat, _ := wordpiece.ParseTruncation(cfg.Truncation)
	ours := make([]wordpiece.Encoding, len(pairs))
	for _, cache := range []int{wordpiece.DefaultConfig().WordCacheSize, 0} {
		tk, err := load(cfg, cache)
		if err != nil {
			return nil, err
		}
		keep := ours
		if cache == 0 {
			keep = nil
		}
		best, tokens, err := bestRound(cfg.Rounds, func() (int, error) { return encodeEach(ctx, tk, pairs, cfg.MaxLen, strat, keep) })
		if err != nil {
			return nil, err
		}
		note := "word cache on (default), warm"
		if cache == 0 {
			note = "word cache off"
		}
		res.Rows = append(res.Rows, newRow("hybrank wordpiece", "EncodePair", len(pairs), tokens, best, note))
		if cache == 0 {
			continue
		}
		best, _, err = bestRound(cfg.Rounds, func() (int, error) {
			return 0, encodeGroups(ctx, tk, pairs, cfg.DocsPerQuery, cfg.MaxLen, strat)
		})
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, newRow("hybrank wordpiece", "EncodePairs", len(pairs), tokens, best,
			fmt.Sprintf("%d docs per query, query tokenized once", cfg.DocsPerQuery)))
	}
	return ours, nil
}

// bestRound runs f once to warm up, then rounds times, and returns the
// fastest timed round and the token count f returned.
func bestRound(rounds int, f func() (int, error)) (time.Duration, int, error) {
	best, tokens := time.Duration(1<<62), 0
	for r := 0; r < rounds+1; r++ { // round 0 warms up
		start := time.Now()
		n, err := f()
		if err != nil {
			return 0, 0, err
		}
		if el := time.Since(start); r > 0 && el < best {
			best = el
		}
		tokens = n
	}
	return best, tokens, nil
}

// encodeEach encodes every pair with EncodePair, storing the encodings in
// keep when it is not nil, and returns the token count.
func encodeEach(ctx context.Context, tk *wordpiece.Tokenizer, pairs [][2]string, maxLen int, strat wordpiece.Truncation, keep []wordpiece.Encoding) (int, error) {
	tokens := 0
	for i, p := range pairs {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		e, err := tk.EncodePair(p[0], p[1], maxLen, strat)
		if err != nil {
			return 0, fmt.Errorf("tokenize pair %d: %w", i, err)
		}
		tokens += e.Len()
		if keep != nil {
			keep[i] = e
		}
	}
	return tokens, nil
}

// encodeGroups encodes the pairs with EncodePairs, group pairs of one
// query at a time.
func encodeGroups(ctx context.Context, tk *wordpiece.Tokenizer, pairs [][2]string, group, maxLen int, strat wordpiece.Truncation) error {
	for i := 0; i < len(pairs); i += group {
		end := min(i+group, len(pairs))
		docs := make([]string, 0, end-i)
		for _, p := range pairs[i:end] {
			docs = append(docs, p[1])
		}
		if _, err := tk.EncodePairs(ctx, pairs[i][0], docs, maxLen, strat); err != nil {
			return err
		}
	}
	return nil
}

func same(e wordpiece.Encoding, ids, types []int32) bool {
	if len(e.IDs) != len(ids) || len(e.TypeIDs) != len(types) {
		return false
	}
	for i := range ids {
		if e.IDs[i] != ids[i] || e.TypeIDs[i] != types[i] {
			return false
		}
	}
	return true
}

func newRow(impl, mode string, pairs, tokens int, d time.Duration, note string) Row {
	s := d.Seconds()
	return Row{
		Impl: impl, Mode: mode, Threads: 1, Seconds: measure.Round(s, 4), Tokens: tokens, Note: note,
		PairsPerSec: measure.Round(float64(pairs)/s, 1), TokensPerS: measure.Round(float64(tokens)/s, 0),
	}
}

// Report renders res for bench/results/tokenize.md.
func Report(cfg Config, res Result, command string) report.Report {
	notes := []string{
		fmt.Sprintf("%d (query, document) pairs from %s, max length %d, %s truncation; best of %d rounds after a warm-up round; one thread on both sides.",
			cfg.Pairs, filepath.Base(cfg.Data), cfg.MaxLen, cfg.Truncation, cfg.Rounds),
	}
	if res.HFSkipped != "" {
		notes = append(notes, "HF not measured: "+res.HFSkipped)
	} else {
		notes = append(notes,
			fmt.Sprintf("Parity on these pairs: %d / %d identical (ids and type ids).", res.ParityEqual, res.ParityTotal),
			fmt.Sprintf("Ratio, ours EncodePair (cache on) over HF's faster mode: %.2fx.", res.Ratio),
			"HF's encodeBatch row tokenizes q and d as separate texts (the Node binding has no pair batch API), so it skips pair truncation and post-processing: it flatters HF slightly.",
			"Both sides run one after the other on the same machine; on a shared or loaded machine compare the ratio, not the absolute figures.")
	}
	return report.Report{
		Title:   "Tokenizer throughput: hybrank wordpiece vs Hugging Face tokenizers",
		Command: command,
		Checks:  res.Checks,
		Notes:   notes,
		Config:  cfg,
		Columns: report.Columns(Row{}),
		Rows:    report.Rows(res.Rows),
	}
}
