package tokenize

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// hfOut is what hfScript prints.
type hfOut struct {
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

func runHF(ctx context.Context, cfg Config, pairs [][2]string) (*hfOut, error) {
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
	if err := os.WriteFile(script, []byte(hfScript), 0o600); err != nil {
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
	var out hfOut
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("tokenize: HF output: %w", err)
	}
	if len(out.Pairs) != len(pairs) {
		return nil, fmt.Errorf("tokenize: HF returned %d pairs, want %d", len(out.Pairs), len(pairs))
	}
	return &out, nil
}

// hfScript times HF tokenizers inside node, around the encode calls
// only (process start and loading excluded):
//   - encode(q, d) awaited one pair at a time (pays one N-API call and one
//     libuv task per pair);
//   - encodeBatch over the 2N texts q and d separately, single-threaded: the
//     Rust tokenization work without the per-call overhead, but also
//     without the pair post-processing, so an upper bound for HF.
const hfScript = `
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
