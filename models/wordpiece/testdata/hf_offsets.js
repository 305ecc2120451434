// hf_offsets.js: token ids and offsets of texts from Hugging Face tokenizers
// (the Rust library through its Node addon), without special tokens, for
// TestTokenSpansParityHF. The addon reports offsets in characters (code
// points).
//
// usage: node hf_offsets.js ADDON_DIR IN.json OUT.json
//
// IN: {"tokenizer_json": path} or {"vocab": path, "lowercase": bool},
//     "texts": [text...]
// OUT: [{"ids": [...], "offsets": [[start, end]...]}...]
const t = require(process.argv[2]);
const fs = require('fs');
const input = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));

async function build() {
  if (input.tokenizer_json) return t.Tokenizer.fromFile(input.tokenizer_json);
  // As hf_encode.js: Python's BertWordPieceTokenizer(vocab, lowercase=...).
  const tk = new t.Tokenizer(await t.WordPiece.fromFile(input.vocab, { unkToken: '[UNK]' }));
  tk.setNormalizer(t.bertNormalizer({ cleanText: true, handleChineseChars: true, lowercase: input.lowercase }));
  tk.setPreTokenizer(t.bertPreTokenizer());
  tk.addSpecialTokens(['[UNK]', '[SEP]', '[CLS]', '[PAD]', '[MASK]']);
  return tk;
}

async function main() {
  const tk = await build();
  tk.disablePadding();
  tk.disableTruncation();
  const out = await Promise.all(
    input.texts.map((s) =>
      tk.encode(s, null, { addSpecialTokens: false }).then((e) => ({ ids: e.getIds(), offsets: e.getOffsets() })),
    ),
  );
  fs.writeFileSync(process.argv[4], JSON.stringify(out));
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
