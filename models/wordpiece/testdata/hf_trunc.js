// hf_trunc.js: encodes pairs ("a " * n1, "b " * n2) of one-token words, and
// ("xxxxxx " * n1, "b " * n2) whose first sequence has three-token words,
// with LongestFirst truncation over a grid of lengths and prints the kept
// lengths [max_len, kind, n1, n2, kept1, kept2] as JSON (kind 0 or 1), for
// TestTruncationGridHF.
//
// usage: node hf_trunc.js ADDON_DIR TOKENIZER_JSON
const t = require(process.argv[2]);
(async () => {
  const tk = t.Tokenizer.fromFile(process.argv[3]);
  tk.disablePadding();
  const out = [];
  for (const max of [3, 4, 5, 6, 7, 8, 10, 13]) {
    tk.setTruncation(max, { strategy: 'LongestFirst' });
    for (const [kind, word] of [[0, 'a '], [1, 'xxxxxx ']]) {
      for (let n1 = 0; n1 <= 15; n1++) {
        for (let n2 = 0; n2 <= 15; n2++) {
          const e = await tk.encode(word.repeat(n1), 'b '.repeat(n2));
          const types = e.getTypeIds();
          const zeros = types.filter((x) => x === 0).length;
          out.push([max, kind, n1, n2, zeros - 2, types.length - zeros - 1]);
        }
      }
    }
  }
  console.log(JSON.stringify(out));
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
