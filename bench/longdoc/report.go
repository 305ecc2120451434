package longdoc

import (
	"fmt"

	"github.com/hybrank/hybrank/bench/report"
)

// Report renders longdoc.md: the rows, INFO checks on what chunking gains
// over truncation, and how the collection was made.
func Report(cfg Config, res Result, command string) report.Report {
	rows := make([]any, len(res.Rows))
	for i, r := range res.Rows {
		rows[i] = r
	}
	return report.Report{
		Title:   "Long documents: truncation vs chunked scoring (buried scifact abstracts)",
		Command: command,
		Checks:  Checks(res.Rows),
		Notes: []string{
			fmt.Sprintf("Collection: %d long documents (%d with a buried relevant abstract, %d distractors), %.0f tokens on average, %d–%d tokens each; "+
				"each judged query's relevant scifact abstracts (title + text) are buried, one per long document, at a random (seed %d) boundary between whole unjudged scifact documents; "+
				"the distractors are unjudged documents only. A query's candidates are its relevant long documents and every distractor.",
				res.Docs, res.Relevant, res.Docs-res.Relevant, res.MeanTokens, cfg.Build.MinTokens, cfg.Build.MaxTokens, cfg.Build.Seed),
			"Quality rows (real_weights=true) score with a real bi-encoder: the cosine of the query vector and the document vector (truncate: the document cut to the model's window, today's behaviour) " +
				"or each window's vector (chunk: Embedder.EmbedSpans, aggregated by max or by the mean of the top k window cosines). Both aggregates of a stride come from one embedding pass and share its time. " +
				"span hit: the share of relevant long documents whose best window overlaps the buried abstract.",
			"Cross-encoder rows (real_weights=false) run a generated cross-encoder: random weights, so scores (and nDCG) mean nothing, but the pairs scored and the time are real. " +
				"Chunked rows score every window of every candidate of a query in one ScoreSpans call: the windows are planned and batched as ordinary pairs. " +
				"max_chunks caps the windows per document, keeping them evenly spread (first and last included).",
			"pairs: model inputs (windows, or one per document when truncating); s: wall time of scoring, tokenizing included, loading excluded. " +
				"window: the model's sequence length; a window holds that less the special tokens (and, for the cross-encoder, the query), and a stride at least that long gives adjacent windows.",
		},
		Config:  cfg,
		Columns: report.Columns(Row{}),
		Rows:    rows,
	}
}

// Checks states, per chunked quality row, its nDCG@10 gain over the
// truncated row of the same model (INFO: there is no target).
func Checks(rows []Row) []report.Check {
	var cs []report.Check
	trunc := map[string]Row{}
	for _, r := range rows {
		if !r.RealWeights {
			continue
		}
		if r.Mode == "truncate" {
			trunc[r.Model] = r
			continue
		}
		t, ok := trunc[r.Model]
		if !ok {
			continue
		}
		cs = append(cs, report.Inform(fmt.Sprintf("%s stride %d %s: nDCG@10 chunked − truncated", r.Model, r.Stride, r.Aggregate), r.NDCG10-t.NDCG10,
			fmt.Sprintf("%.4f vs %.4f, %.1f× the pairs", r.NDCG10, t.NDCG10, float64(r.Pairs)/float64(max(t.Pairs, 1)))))
	}
	return cs
}
