package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hybrank/hybrank/models/wordpiece"
)

// TokenizeConfig configures `bench tokenize`: our WordPiece tokenizer against
// Hugging Face's Rust tokenizers, in process (binaries built with -tags
// hftokenizers) and through its Node addon, on the same (query, document)
// pairs.
type TokenizeConfig struct {
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
}

// DefaultTokenizeConfig returns 2,000 pairs at max length 512, LongestFirst,
// best of 3 rounds. Data, Tokenizer and HFAddon must be filled in.
func DefaultTokenizeConfig() TokenizeConfig {
	return TokenizeConfig{Pairs: 2000, MaxLen: 512, Truncation: "longest_first", Node: "node", Rounds: 3, DocsPerQuery: 100}
}

// Validate reports whether c is usable.
func (c TokenizeConfig) Validate() error {
	switch {
	case c.Data == "":
		return errors.New("tokenize: Data (a BEIR folder) is required")
	case c.Tokenizer == "":
		return errors.New("tokenize: Tokenizer (tokenizer.json or vocab.txt) is required")
	case c.Pairs < 1:
		return fmt.Errorf("tokenize: Pairs %d must be positive", c.Pairs)
	case c.MaxLen < 3:
		return fmt.Errorf("tokenize: MaxLen %d must be at least 3", c.MaxLen)
	case c.Rounds < 1:
		return fmt.Errorf("tokenize: Rounds %d must be positive", c.Rounds)
	case c.DocsPerQuery < 1:
		return fmt.Errorf("tokenize: DocsPerQuery %d must be positive", c.DocsPerQuery)
	}
	_, err := wordpiece.ParseTruncation(c.Truncation)
	return err
}

// TokenizeRow is one measured implementation.
type TokenizeRow struct {
	Impl        string  `json:"impl"`
	Mode        string  `json:"mode"`
	Threads     int     `json:"threads"`
	PairsPerSec float64 `json:"pairs_per_s"`
	TokensPerS  float64 `json:"tokens_per_s"`
	Seconds     float64 `json:"best_round_s"`
	Tokens      int     `json:"tokens"`
	Note        string  `json:"note,omitempty"`
}

// TokenizeResult is the outcome of RunTokenize.
type TokenizeResult struct {
	Config TokenizeConfig `json:"config"`
	Rows   []TokenizeRow  `json:"rows"`
	// ParityEqual and ParityTotal count pairs whose ids and type ids are
	// identical between us and HF (0/0 when HF was skipped).
	ParityEqual int `json:"parity_equal"`
	ParityTotal int `json:"parity_total"`
	// Ratio is our single-goroutine EncodePair pairs/s over HF's best
	// single-thread pairs/s (0 when HF was skipped).
	Ratio float64 `json:"ratio_vs_hf"`
	// HFSkipped says why HF was not measured, if it was not.
	HFSkipped string `json:"hf_skipped,omitempty"`
	// RustParityEqual and RustParityTotal count pairs identical to HF in
	// process (package models/hftok); RatioRust is our EncodePair pairs/s
	// over its EncodePair pairs/s (zeros when RustSkipped says why not).
	RustParityEqual int     `json:"rust_parity_equal"`
	RustParityTotal int     `json:"rust_parity_total"`
	RatioRust       float64 `json:"ratio_vs_hf_rust"`
	RustSkipped     string  `json:"hf_rust_skipped,omitempty"`
}

// tokenizeLoad builds the tokenizer of cfg.
func tokenizeLoad(cfg TokenizeConfig, cacheSize int) (*wordpiece.Tokenizer, error) {
	if strings.HasSuffix(cfg.Tokenizer, ".json") {
		return wordpiece.LoadTokenizerJSON(cfg.Tokenizer, cacheSize)
	}
	wc := wordpiece.DefaultConfig()
	wc.WordCacheSize = cacheSize
	return wordpiece.LoadVocab(cfg.Tokenizer, wc)
}

// tokenizePairs builds cfg.Pairs pairs: query i mod Q with a document picked
// by a fixed stride, so runs are repeatable; pairs of one query are
// consecutive (cfg.DocsPerQuery of them) for the EncodePairs row.
func tokenizePairs(cfg TokenizeConfig) ([][2]string, error) {
	ds, err := LoadBEIR(cfg.Data)
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

// RunTokenize measures our tokenizer (single goroutine: EncodePair per pair,
// with and without the word cache, and EncodePairs per query group) and, when
// the addon and node are available, HF's (single thread, inside node, timed
// around the encode calls only).
func RunTokenize(ctx context.Context, cfg TokenizeConfig) (TokenizeResult, error) {
	res := TokenizeResult{Config: cfg}
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	strat, _ := wordpiece.ParseTruncation(cfg.Truncation)
	pairs, err := tokenizePairs(cfg)
	if err != nil {
		return res, err
	}
	ours := make([]wordpiece.Encoding, len(pairs))
	for _, cache := range []int{wordpiece.DefaultConfig().WordCacheSize, 0} {
		tk, err := tokenizeLoad(cfg, cache)
		if err != nil {
			return res, err
		}
		best, tokens := time.Duration(1<<62), 0
		for r := 0; r < cfg.Rounds+1; r++ { // round 0 warms up
			tokens = 0
			start := time.Now()
			for i, p := range pairs {
				if i&1023 == 0 {
					if err := ctx.Err(); err != nil {
						return res, err
					}
				}
				e, err := tk.EncodePair(p[0], p[1], cfg.MaxLen, strat)
				if err != nil {
					return res, fmt.Errorf("tokenize pair %d: %w", i, err)
				}
				tokens += e.Len()
				if cache != 0 {
					ours[i] = e
				}
			}
			if el := time.Since(start); r > 0 && el < best {
				best = el
			}
		}
		note := "word cache on (default), warm"
		if cache == 0 {
			note = "word cache off"
		}
		res.Rows = append(res.Rows, tokenizeRow("hybrank wordpiece", "EncodePair", len(pairs), tokens, best, note))
		if cache == 0 {
			continue
		}
		best = time.Duration(1 << 62)
		for r := 0; r < cfg.Rounds+1; r++ {
			start := time.Now()
			for i := 0; i < len(pairs); i += cfg.DocsPerQuery {
				end := min(i+cfg.DocsPerQuery, len(pairs))
				docs := make([]string, 0, end-i)
				for _, p := range pairs[i:end] {
					docs = append(docs, p[1])
				}
				if _, err := tk.EncodePairs(ctx, pairs[i][0], docs, cfg.MaxLen, strat); err != nil {
					return res, err
				}
			}
			if el := time.Since(start); r > 0 && el < best {
				best = el
			}
		}
		res.Rows = append(res.Rows, tokenizeRow("hybrank wordpiece", "EncodePairs", len(pairs), tokens, best,
			fmt.Sprintf("%d docs per query, query tokenized once", cfg.DocsPerQuery)))
	}
	row, equal, skip, err := tokenizeHFRust(ctx, cfg, strat, pairs, ours)
	if err != nil {
		return res, err
	}
	if res.RustSkipped = skip; skip == "" {
		res.Rows = append(res.Rows, row)
		res.RustParityEqual, res.RustParityTotal = equal, len(pairs)
		res.RatioRust = res.Rows[0].PairsPerSec / row.PairsPerSec
	}
	if cfg.HFAddon == "" {
		res.HFSkipped = "no HF addon given"
		return res, nil
	}
	hf, err := tokenizeRunHF(ctx, cfg, pairs)
	if err != nil {
		return res, err
	}
	for _, m := range hf.Modes {
		res.Rows = append(res.Rows, tokenizeRow("HF tokenizers "+hf.Version+" (Rust, via Node)", m.Mode, len(pairs), m.Tokens,
			time.Duration(m.Seconds*float64(time.Second)), m.Note))
	}
	for i, g := range hf.Pairs {
		res.ParityTotal++
		if tokenizeSame(ours[i], g.IDs, g.Types) {
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
	return res, nil
}

func tokenizeSame(e wordpiece.Encoding, ids, types []int32) bool {
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

func tokenizeRow(impl, mode string, pairs, tokens int, d time.Duration, note string) TokenizeRow {
	s := d.Seconds()
	return TokenizeRow{
		Impl: impl, Mode: mode, Threads: 1, Seconds: Round(s, 4), Tokens: tokens, Note: note,
		PairsPerSec: Round(float64(pairs)/s, 1), TokensPerS: Round(float64(tokens)/s, 0),
	}
}

// tokenizeHFOut is what tokenizeHFScript prints.
type tokenizeHFOut struct {
	Version string `json:"version"`
	Modes   []struct {
		Mode    string  `json:"mode"`
		Seconds float64 `json:"seconds"`
		Tokens  int     `json:"tokens"`
		Note    string  `json:"note"`
	} `json:"modes"`
	Pairs []struct {
		IDs   []int32 `json:"ids"`
		Types []int32 `json:"types"`
	} `json:"pairs"`
}

func tokenizeRunHF(ctx context.Context, cfg TokenizeConfig, pairs [][2]string) (*tokenizeHFOut, error) {
	if _, err := os.Stat(filepath.Join(cfg.HFAddon, "package.json")); err != nil {
		return nil, fmt.Errorf("tokenize: HF addon: %w", err)
	}
	dir, err := os.MkdirTemp("", "hybrank-tokenize-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	addon, err := filepath.Abs(cfg.HFAddon)
	if err != nil {
		return nil, err
	}
	tokPath, err := filepath.Abs(cfg.Tokenizer)
	if err != nil {
		return nil, err
	}
	strategy := map[string]string{"longest_first": "LongestFirst", "only_second": "OnlySecond", "only_first": "OnlyFirst"}[cfg.Truncation]
	in := map[string]any{
		"addon":     addon,
		"tokenizer": tokPath,
		"max_len":   cfg.MaxLen,
		"strategy":  strategy,
		"rounds":    cfg.Rounds,
		"pairs":     pairs,
	}
	data, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	inPath, outPath, script := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json"), filepath.Join(dir, "hf_bench.js")
	if err := os.WriteFile(inPath, data, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(script, []byte(tokenizeHFScript), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, cfg.Node, script, inPath, outPath)
	// One thread for HF too: rayon (encodeBatch) and libuv (async encode).
	cmd.Env = append(os.Environ(), "RAYON_NUM_THREADS=1", "TOKENIZERS_PARALLELISM=false", "UV_THREADPOOL_SIZE=1")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("tokenize: node HF bench: %w\n%s", err, msg)
	}
	data, err = os.ReadFile(outPath)
	if err != nil {
		return nil, err
	}
	var out tokenizeHFOut
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("tokenize: HF output: %w", err)
	}
	if len(out.Pairs) != len(pairs) {
		return nil, fmt.Errorf("tokenize: HF returned %d pairs, want %d", len(out.Pairs), len(pairs))
	}
	return &out, nil
}

// tokenizeHFScript times HF tokenizers inside node, around the encode calls
// only (process start and loading excluded):
//   - encode(q, d) awaited one pair at a time (pays one N-API call and one
//     libuv task per pair);
//   - encodeBatch over the 2N texts q and d separately, single-threaded: the
//     Rust tokenization work without the per-call overhead, but also
//     without the pair post-processing, so an upper bound for HF.
const tokenizeHFScript = `
const fs = require('fs');
const input = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const t = require(input.addon);
const version = require(input.addon + '/package.json').version;
async function build() {
  if (input.tokenizer.endsWith('.json')) return t.Tokenizer.fromFile(input.tokenizer);
  const tk = new t.Tokenizer(await t.WordPiece.fromFile(input.tokenizer, { unkToken: '[UNK]' }));
  tk.setNormalizer(t.bertNormalizer({ cleanText: true, handleChineseChars: true, lowercase: true }));
  tk.setPreTokenizer(t.bertPreTokenizer());
  tk.setPostProcessor(t.bertProcessing(['[SEP]', tk.tokenToId('[SEP]')], ['[CLS]', tk.tokenToId('[CLS]')]));
  tk.addSpecialTokens(['[UNK]', '[SEP]', '[CLS]', '[PAD]', '[MASK]']);
  return tk;
}
const now = () => Number(process.hrtime.bigint()) / 1e9;
(async () => {
  const tk = await build();
  tk.disablePadding();
  tk.setTruncation(input.max_len, { strategy: input.strategy });
  const pairs = input.pairs;
  const modes = [];
  let out = [];
  let best = Infinity, tokens = 0;
  for (let r = 0; r <= input.rounds; r++) {
    const res = [];
    const s = now();
    for (const [q, d] of pairs) res.push(await tk.encode(q, d));
    const el = now() - s;
    if (r > 0 && el < best) best = el;
    if (r === 0) {
      out = res.map((e) => ({ ids: e.getIds(), types: e.getTypeIds() }));
      tokens = out.reduce((a, e) => a + e.ids.length, 0);
    }
  }
  modes.push({ mode: 'encode(q, d) per pair', seconds: best, tokens, note: 'awaited one at a time; includes N-API + async task per pair' });
  const texts = [];
  for (const [q, d] of pairs) texts.push(q, d);
  best = Infinity;
  let tok2 = 0;
  for (let r = 0; r <= input.rounds; r++) {
    const s = now();
    const es = await tk.encodeBatch(texts);
    const el = now() - s;
    if (r > 0 && el < best) best = el;
    if (r === 0) tok2 = es.reduce((a, e) => a + e.getIds().length, 0);
  }
  modes.push({ mode: 'encodeBatch(2N single texts)', seconds: best, tokens: tok2, note: 'q and d encoded separately, no pair post-processing; RAYON_NUM_THREADS=1' });
  fs.writeFileSync(process.argv[3], JSON.stringify({ version, modes, pairs: out }));
})().catch((e) => { console.error(e); process.exit(1); });
`

// WriteTokenizeReport writes dir/name.md for res.
func WriteTokenizeReport(dir, name, command string, res TokenizeResult) (string, error) {
	rows := make([]map[string]any, 0, len(res.Rows))
	for _, r := range res.Rows {
		rows = append(rows, map[string]any{
			"impl": r.Impl, "mode": r.Mode, "threads": r.Threads, "pairs/s": r.PairsPerSec,
			"tokens/s": r.TokensPerS, "best round s": r.Seconds, "tokens": r.Tokens, "note": r.Note,
		})
	}
	notes := []string{
		fmt.Sprintf("%d (query, document) pairs from %s, max length %d, %s truncation; best of %d rounds after a warm-up round; one thread on both sides.",
			res.Config.Pairs, filepath.Base(res.Config.Data), res.Config.MaxLen, res.Config.Truncation, res.Config.Rounds),
	}
	if res.RustSkipped != "" {
		notes = append(notes, "HF in process not measured: "+res.RustSkipped)
	} else {
		notes = append(notes,
			fmt.Sprintf("Parity with HF in process: %d / %d pairs identical (ids and type ids).", res.RustParityEqual, res.RustParityTotal),
			fmt.Sprintf("Ratio, ours EncodePair (cache on) over HF in process EncodePair: %.2fx (the like-for-like comparison: both called from Go, one pair at a time).", res.RatioRust))
	}
	if res.HFSkipped != "" {
		notes = append(notes, "HF not measured: "+res.HFSkipped)
	} else {
		notes = append(notes,
			fmt.Sprintf("Parity on these pairs: %d / %d identical (ids and type ids).", res.ParityEqual, res.ParityTotal),
			fmt.Sprintf("Ratio, ours EncodePair (cache on) over HF via Node, faster mode: %.2fx (Node's per-call overhead flatters us; prefer the in-process ratio).", res.Ratio),
			"HF's encodeBatch row tokenizes q and d as separate texts (the Node binding has no pair batch API), so it skips pair truncation and post-processing: it flatters HF slightly.",
			"Both sides run one after the other on the same machine; on a shared or loaded machine compare the ratio, not the absolute figures.")
	}
	return WriteReport(dir, name, Report{
		Title:   "Tokenizer throughput: hybrank wordpiece vs Hugging Face tokenizers",
		Command: command,
		Notes:   notes,
		Config:  res.Config,
		Columns: []string{"impl", "mode", "threads", "pairs/s", "tokens/s", "best round s", "tokens", "note"},
		Rows:    rows,
	})
}
