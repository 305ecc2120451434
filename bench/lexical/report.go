package lexical

import (
	"slices"
	"sort"
	"strings"

	"github.com/hybrank/hybrank/bench/report"
)

// Report is the report of res (bench/results/lexical.md and friends), with
// lexical_scaling.svg when res has synthetic rows.
func Report(cfg Config, res Result, command string) report.Report {
	idconv := "documents whose id equals the query id are kept, as trec_eval does (BEIR's ignore_identical_ids=False)"
	if cfg.Eval.DropIdenticalIDs {
		idconv = "documents whose id equals the query id are dropped before scoring (BEIR's ignore_identical_ids=True)"
	}
	rep := report.Report{
		Title:   "Lexical BM25",
		Command: command,
		Checks:  res.Checks,
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
		Config:  cfg,
		Columns: report.Columns(Row{}),
		Rows:    report.Rows(res.Rows),
	}
	if slices.ContainsFunc(res.Rows, func(r Row) bool { return r.Impl != implHybrank }) {
		rep.Notes = append(rep.Notes, "impl=bm25s: bm25s (make peers; versions pinned in bench/peers/requirements.txt, each row's in its JSON) run by bench/peers right after hybrank on the same corpus, variant, k1, b, delta and top-K, one thread: "+
			"index_s is its tokenization (bm25s English stopwords, PyStemmer Snowball) + indexing; QPS is its queries / the fastest of the same number of rounds, query tokenization included. "+
			"Its run file is scored by bench/eval exactly as hybrank's hits (trec_eval order and conventions). hybrank × = hybrank QPS / bm25s QPS, same run. "+
			"The checks require the two nDCG@10 to agree at the targets' decimals.")
	}
	if panels := scaling(res.Rows); panels != nil {
		rep.Figures = []report.Figure{{Alt: "BM25 QPS and p99 against corpus size", Panels: panels}}
	}
	return rep
}

// scaling plots QPS and p99 against corpus size for the synthetic rows
// (one line per variant); nil without synthetic rows.
func scaling(rows []Row) []report.Plot {
	byVar := map[string][]Row{}
	for _, r := range rows {
		if strings.HasPrefix(r.Dataset, "synthetic-") {
			byVar[r.Variant] = append(byVar[r.Variant], r)
		}
	}
	if len(byVar) == 0 {
		return nil
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
	return []report.Plot{qps, p99}
}
