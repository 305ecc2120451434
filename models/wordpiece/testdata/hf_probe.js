// hf_probe.js: runs Hugging Face tokenizers' BertNormalizer and
// BertPreTokenizer on every Unicode code point, one at a time, and writes
// what they do, for TestUnicodeParityHF.
//
// usage: node hf_probe.js ADDON_DIR OUT.json
//
// Output: {"A": {cp: normalized}, "B": ..., "C": ..., "punct": [cp],
// "space": [cp]} where A/B/C hold only code points whose normalised form
// differs from themselves, under three normalizer settings:
//   A: clean_text, handle_chinese_chars, strip_accents, lowercase
//   B: clean_text, handle_chinese_chars
//   C: lowercase only
// and punct/space list the code points the pre-tokenizer isolates/removes.
const t = require(process.argv[2]);
const fs = require('fs');
const nA = t.bertNormalizer({ cleanText: true, handleChineseChars: true, stripAccents: true, lowercase: true });
const nB = t.bertNormalizer({ cleanText: true, handleChineseChars: true, stripAccents: false, lowercase: false });
const nC = t.bertNormalizer({ cleanText: false, handleChineseChars: false, stripAccents: false, lowercase: true });
const p = t.bertPreTokenizer();
const out = { A: {}, B: {}, C: {}, punct: [], space: [] };
for (let cp = 0; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue; // not valid in Rust strings
  const s = String.fromCodePoint(cp);
  const a = nA.normalizeString(s);
  if (a !== s) out.A[cp] = a;
  const b = nB.normalizeString(s);
  if (b !== s) out.B[cp] = b;
  const c = nC.normalizeString(s);
  if (c !== s) out.C[cp] = c;
  // 'a' + c + 'a': 3 pieces if c is isolated punctuation, 2 if it is
  // whitespace (removed), 1 if it is part of the word.
  const r = p.preTokenizeString('a' + s + 'a');
  if (r.length === 3) out.punct.push(cp);
  else if (r.length === 2) out.space.push(cp);
  else if (r.length !== 1) throw new Error('unexpected split of ' + cp);
}
fs.writeFileSync(process.argv[3], JSON.stringify(out));
