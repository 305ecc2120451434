// hf_encode.js: encodes texts and pairs with Hugging Face tokenizers (the
// Rust library through its Node addon) and writes the goldens that
// TestParityHF compares with.
//
// usage: node hf_encode.js ADDON_DIR IN.json OUT.json
//
// IN: {"tokenizer_json": path} or {"vocab": path, "lowercase": bool},
//     "max_lens": [n...], "strategies": ["LongestFirst"|"OnlySecond"...],
//     "pairs": [[q, d]...], "singles": [text...], "pad_chunk": n
// OUT: {"pairs": {"<maxLen>/<strategy>": [{"ids","types","mask"} | {"err"}]},
//       "singles": {"<maxLen>": [...]},
//       "padded": [{"ids","types","mask"}] (encodeBatch of singles in chunks
//       of pad_chunk with the tokenizer's padding, truncation at max_lens[0])}
const t = require(process.argv[2]);
const fs = require('fs');
const input = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));

async function build() {
  if (input.tokenizer_json) return t.Tokenizer.fromFile(input.tokenizer_json);
  // The equivalent of Python's BertWordPieceTokenizer(vocab, lowercase=...).
  const tk = new t.Tokenizer(await t.WordPiece.fromFile(input.vocab, { unkToken: '[UNK]' }));
  tk.setNormalizer(t.bertNormalizer({ cleanText: true, handleChineseChars: true, lowercase: input.lowercase }));
  tk.setPreTokenizer(t.bertPreTokenizer());
  const id = (s) => tk.tokenToId(s);
  tk.setPostProcessor(t.bertProcessing(['[SEP]', id('[SEP]')], ['[CLS]', id('[CLS]')]));
  tk.addSpecialTokens(['[UNK]', '[SEP]', '[CLS]', '[PAD]', '[MASK]']);
  return tk;
}

const rec = (e) => ({ ids: e.getIds(), types: e.getTypeIds(), mask: e.getAttentionMask() });

async function main() {
  const tk = await build();
  const out = { pairs: {}, singles: {}, padded: [] };
  tk.disablePadding();
  for (const maxLen of input.max_lens) {
    for (const strategy of input.strategies) {
      tk.setTruncation(maxLen, { strategy });
      out.pairs[maxLen + '/' + strategy] = await Promise.all(
        input.pairs.map(([q, d]) => tk.encode(q, d).then(rec, (err) => ({ err: String(err) }))),
      );
    }
    tk.setTruncation(maxLen, { strategy: 'LongestFirst' });
    out.singles[maxLen] = await Promise.all(
      input.singles.map((s) => tk.encode(s).then(rec, (err) => ({ err: String(err) }))),
    );
  }
  // Padded batches: a fresh tokenizer keeps tokenizer.json's own padding
  // block (BatchLongest, pad_to_multiple_of); the vocab one pads to longest.
  const padTk = await build();
  if (!input.tokenizer_json) padTk.setPadding({});
  padTk.setTruncation(input.max_lens[0], { strategy: 'LongestFirst' });
  for (let i = 0; i < input.singles.length; i += input.pad_chunk) {
    const es = await padTk.encodeBatch(input.singles.slice(i, i + input.pad_chunk));
    out.padded.push(...es.map(rec));
  }
  fs.writeFileSync(process.argv[4], JSON.stringify(out));
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
