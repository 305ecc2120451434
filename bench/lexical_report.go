package bench

import (
	"sort"
	"strings"

	"github.com/hybrank/hybrank/bench/report"
)

// LexicalTable renders rows as a markdown table with LexicalColumns.
func LexicalTable(rows []map[string]any) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(LexicalColumns, " | ") + " |\n|")
	for range LexicalColumns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		cells := make([]string, len(LexicalColumns))
		for i, c := range LexicalColumns {
			cells[i] = report.FormatValue(r[c])
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// LexicalReport is the report written to bench/results/lexical.md.
func LexicalReport(opt LexicalOptions, command string, rows []map[string]any) report.Report {
	idconv := "documents whose id equals the query id are kept, as trec_eval does (BEIR's ignore_identical_ids=False)"
	if opt.Eval.DropIdenticalIDs {
		idconv = "documents whose id equals the query id are dropped before scoring (BEIR's ignore_identical_ids=True)"
	}
	return report.Report{
		Title:   "Lexical BM25",
		Command: command,
		Notes: []string{
			"Index text is title + \" \" + text, analyzed with the bm25s-compatible analyzer (lowercase, `\\w\\w+` tokens, bm25s STOPWORDS_EN, Snowball English). " +
				"QPS: judged queries / wall time for all of them on one goroutine, query analysis included, top-K, best of the rounds; p50/p99 from that round. " +
				"index_s: analysis + commit (+ one Rebuild for chunked synthetic builds), single goroutine.",
			"Metrics: pytrec_eval conventions (linear gains, ideal DCG from all judged relevant docs, ties ordered by doc id descending as trec_eval does); " +
				idconv + "; ndcg@10_other_id_convention and recall@100_other_id_convention in the JSON are the other choice. " +
				"The bm25s figures in ANCHORS.md (scifact 0.6802 / 0.9127, cisi 0.3796 / 0.4351, cran 0.3697 / 0.7354) are reproduced to 4 decimals with identical ids kept (the default); " +
				"BEIR's drop (--drop-identical-ids) lowers cisi to 0.3781 / 0.4342 and cran to 0.3695 / 0.7352 (scifact unchanged).",
			"bytes_per_posting: postings.Stats IndexBytes (term bitmaps, tf arrays, norms, bounds) / postings; bm25s's scipy CSC is 8.",
		},
		Config:  opt,
		Columns: LexicalColumns,
		Rows:    anyRows(rows),
	}
}

// WriteLexicalScaling plots QPS and p99 against corpus size for the
// synthetic results (one line per variant) as an SVG file.
func WriteLexicalScaling(path string, results []LexicalResult) error {
	byVar := map[string][]LexicalResult{}
	for _, r := range results {
		if strings.HasPrefix(r.Dataset, "synthetic-") {
			byVar[r.Variant] = append(byVar[r.Variant], r)
		}
	}
	names := make([]string, 0, len(byVar))
	for v := range byVar {
		names = append(names, v)
	}
	sort.Strings(names)
	qps := report.Plot{Title: "BM25 QPS vs corpus size (1 goroutine, top-100)", XLabel: "documents", YLabel: "queries / s", LogX: true, LogY: true}
	p99 := report.Plot{Title: "BM25 p99 latency vs corpus size", XLabel: "documents", YLabel: "p99 ms", LogX: true, LogY: true}
	for _, v := range names {
		rs := byVar[v]
		sort.Slice(rs, func(i, j int) bool { return rs[i].Docs < rs[j].Docs })
		var x, q, p []float64
		for _, r := range rs {
			x = append(x, float64(r.Docs))
			q = append(q, r.QPS)
			p = append(p, r.P99Ms)
		}
		qps.Series = append(qps.Series, report.Series{Name: v, X: x, Y: q})
		p99.Series = append(p99.Series, report.Series{Name: v, X: x, Y: p})
	}
	return report.WriteSVGFile(path, qps, p99)
}
