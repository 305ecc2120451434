// Package bench is hybrank's benchmark harness: dataset loading (BEIR
// layout), retrieval metrics with trec_eval / BEIR conventions, a seeded
// synthetic corpus generator, latency percentiles, machine description,
// result writers (markdown + JSON lines, SVG line plots) and the
// benchmark drivers that cmd/bench calls (one file per subcommand).
//
// # Conventions
//
// Metrics follow pytrec_eval as called by BEIR's EvaluateRetrieval.evaluate:
// linear gains, ideal DCG over every judged relevant document, judgments
// with score ≤ 0 are not relevant, and every retrieved document counts, as
// in trec_eval and in bm25s's published figures (eval.Options.DropIdenticalIDs
// applies BEIR's ignore_identical_ids, which drops a document whose id
// equals the query id). Queries are
// averaged over those that have at least one judgment.
//
// # Concurrency and ownership
//
// Loaded datasets and generated corpora are plain values, read-only once
// returned, and safe to share between goroutines. The metric functions
// are pure. Writers (Progress, result files) are for one goroutine each
// unless their doc says otherwise. Functions that take a context poll it
// every 1024 items.
package bench
