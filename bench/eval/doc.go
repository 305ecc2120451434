// Package eval is the evaluation layer of the benchmark harness: BEIR-layout
// datasets (corpus.jsonl, queries.jsonl, qrels/test.tsv), relevance
// judgments, and the retrieval metrics nDCG@k, Recall@k and MRR@k with
// trec_eval / BEIR conventions.
//
// # Conventions
//
// Metrics follow pytrec_eval as called by BEIR's EvaluateRetrieval.evaluate:
// linear gains, ideal DCG over every judged relevant document, judgments
// with score ≤ 0 are not relevant, and every retrieved document counts, as
// in trec_eval and in bm25s's published figures (Options.DropIdenticalIDs
// applies BEIR's ignore_identical_ids, which drops a document whose id
// equals the query id). Queries are averaged over those that have at least
// one judgment. TrecOrder sorts hits as trec_eval reads a run: score
// descending, ties by document id descending.
//
// # Concurrency and ownership
//
// A loaded Dataset is a plain value, read-only once returned, and safe to
// share between goroutines. The metric functions are pure and never modify
// their arguments.
package eval
