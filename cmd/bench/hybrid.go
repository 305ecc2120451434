package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/models"
)

func init() {
	register(subcommand{
		name:    "hybrid",
		summary: "hybrid engine config matrix (bm25, dense, fusions, rerank per profile under a budget, MMR) and a rerank budget sweep on BEIR",
		run:     runHybrid,
	})
}

func runHybrid(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("hybrid")
	var data, configs, profiles, sweep listFlag
	fs.Var(&data, "data", "BEIR dataset folder (repeatable or comma list)")
	fs.Var(&configs, "configs", `configurations to run (comma list of names or path.Match patterns, e.g. "bm25,rrf*"; default all; "none" = only the sweep)`)
	fs.Var(&profiles, "profiles", "rerank profiles of the matrix (default fast,balanced,accurate)")
	fs.Var(&sweep, "budget-sweep", "budgets for the rerank budget sweep, e.g. 25ms,50ms,100ms,200ms,400ms (empty = no sweep)")
	opt := bench.DefaultHybridOptions()
	fs.DurationVar(&opt.Budget, "budget", opt.Budget, "latency budget of the rerank configurations (0 = none; unbudgeted reranking of 100 candidates takes seconds per query on a small CPU)")
	fs.IntVar(&opt.K, "k", opt.K, "hits per query")
	fs.IntVar(&opt.Candidates, "candidates", opt.Candidates, "candidates per retriever")
	fs.IntVar(&opt.Queries, "queries", 0, "judged queries per configuration (0 = all)")
	fs.IntVar(&opt.Warmup, "warmup", opt.Warmup, "unrecorded warm-up searches before each configuration and budget")
	var sweepProfiles listFlag
	fs.Var(&sweepProfiles, "rerank", "rerank profile(s) of the budget sweep (default balanced)")
	sweepN := fs.Int("sweep-searches", 200, "searches per budget in the sweep (judged queries cycled)")
	root := fs.String("models-root", "", "folder with one model dir per profile (embed, fast, balanced, accurate); default $"+models.ModelsEnv)
	embedDir := fs.String("embed-dir", "", "embedder model dir (overrides --models-root)")
	rerankDir := fs.String("rerank-dir", "", "reranker model dir for every profile (overrides --models-root; for a real export of one model)")
	noDense := fs.Bool("no-dense", false, "run without an embedder (only the bm25 configuration; the budget sweep reranks BM25 candidates)")
	maxDocTokens := fs.Int("max-doc-tokens", 128, "embedder truncation in tokens (0 = the model's maximum)")
	provider := fs.String("provider", "auto", "ONNX Runtime provider: auto, cuda, cpu")
	fs.BoolVar(&opt.Eval.DropIdenticalIDs, "drop-identical-ids", false, "drop retrieved docs whose id equals the query id (BEIR convention)")
	fs.BoolVar(&opt.Progress, "progress", false, "show progress even when stderr is not a terminal")
	jsonOut := fs.Bool("json", false, "print one JSON object per configuration on stdout")
	var notes listFlag
	fs.Var(&notes, "note", "measurement-condition note for the report (repeatable)")
	out := fs.String("out", "bench/results", `folder for hybrid.md and hybrid_budget.svg ("" = do not write)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(data) == 0 {
		return fmt.Errorf("give --data DIR")
	}
	if len(profiles) == 0 {
		profiles = listFlag{models.ProfileFast, models.ProfileBalanced, models.ProfileAccurate}
	}
	budgets, err := bench.ParseDurations(sweep)
	if err != nil {
		return err
	}
	if *root == "" {
		*root = os.Getenv(models.ModelsEnv)
	}
	dirOf := func(profile, override string) (string, error) {
		if override != "" {
			return override, nil
		}
		if *root == "" {
			return "", fmt.Errorf("no model dir for %s: give --models-root, $%s or --embed-dir/--rerank-dir", profile, models.ModelsEnv)
		}
		return filepath.Join(*root, profile), nil
	}
	matrix := bench.HybridMatrix(profiles)
	var sel []bench.HybridConfig
	if !(len(configs) == 1 && configs[0] == "none") {
		if sel, err = bench.SelectHybridConfigs(matrix, configs); err != nil {
			return err
		}
	}
	needDense, needRerank := len(budgets) > 0 && !*noDense, map[string]bool{}
	if len(sweepProfiles) == 0 {
		sweepProfiles = listFlag{models.ProfileBalanced}
	}
	if len(budgets) > 0 {
		for _, p := range sweepProfiles {
			needRerank[p] = true
		}
	}
	for _, c := range sel {
		needDense = needDense || c.Dense
		if c.Rerank != "" {
			needRerank[c.Rerank] = true
		}
	}
	real := map[string]bool{}
	if needDense && !*noDense {
		c, err := models.ProfileConfig(models.ProfileEmbed)
		if err != nil {
			return err
		}
		if c.Dir, err = dirOf(models.ProfileEmbed, *embedDir); err != nil {
			return err
		}
		c.Provider, c.MaxLength = *provider, *maxDocTokens
		opt.EmbedModel, real[models.ProfileEmbed] = c, modeldir.RealWeights(c.Dir)
	}
	opt.RerankModels = map[string]models.Config{}
	for p := range needRerank {
		c, err := models.ProfileConfig(p)
		if err != nil {
			return err
		}
		if c.Dir, err = dirOf(p, *rerankDir); err != nil {
			return err
		}
		c.Provider = *provider
		opt.RerankModels[p], real[p] = c, modeldir.RealWeights(c.Dir)
	}

	enc := json.NewEncoder(os.Stdout)
	var rows, sweepRows []any
	var points []bench.BudgetPoint
	for _, dir := range data {
		ds, err := eval.LoadBEIR(dir)
		if err != nil {
			return err
		}
		h, err := bench.OpenHybridBench(ctx, ds, opt, real)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s: %d docs, commit BM25-only %.1fs, with embedding %.1fs (max-doc-tokens %d)\n",
			ds.Name, len(ds.Docs), h.CommitLexical.Seconds(), h.CommitHybrid.Seconds(), *maxDocTokens)
		for _, c := range sel {
			if c.Dense && *noDense {
				continue
			}
			r, err := h.Run(ctx, c)
			if err != nil {
				return joinClose(err, h)
			}
			row := r.Row()
			row["commit_s"] = measure.Round(h.CommitLexical.Seconds(), 2)
			if c.Dense {
				row["commit_s"] = measure.Round(h.CommitHybrid.Seconds(), 2)
				row["max_doc_tokens"] = *maxDocTokens
			}
			rows = append(rows, row)
			if *jsonOut {
				if err := enc.Encode(row); err != nil {
					return joinClose(err, h)
				}
			} else {
				fmt.Fprintf(os.Stderr, "%-22s ndcg@10 %.4f recall@100 %.4f p50 %.1fms p99 %.1fms degraded %.2f reranked %.1f\n",
					c.Name, r.Scores.NDCG10, r.Scores.Recall100, measure.Ms(r.Latency.P50), measure.Ms(r.Latency.P99), r.DegradedFrac, r.MeanReranked)
			}
		}
		for _, prof := range sweepProfiles {
			if len(budgets) == 0 {
				break
			}
			pts, err := h.BudgetSweep(ctx, prof, budgets, *sweepN)
			if err != nil {
				return joinClose(err, h)
			}
			for _, p := range pts {
				row := p.Row()
				row["dataset"] = ds.Name
				row["real_weights"] = real[prof] && (*noDense || real[models.ProfileEmbed])
				if *noDense {
					row["config"] = "sweep bm25+" + prof
				}
				sweepRows = append(sweepRows, row)
				if *jsonOut {
					if err := enc.Encode(row); err != nil {
						return joinClose(err, h)
					}
				}
				if p.Budget == 100*time.Millisecond && prof == models.ProfileBalanced {
					verdict := "PASS"
					if p.Latency.P99 > 110*time.Millisecond || p.DegradedUnmarked > 0 || p.Timeouts > 0 {
						verdict = "FAIL"
					}
					fmt.Fprintf(os.Stderr, "done-when check (%s, budget 100ms, %s, %d candidates, %d searches): p99 %.1f ms (≤ 110 ms), %d degraded, %d without a correct Degraded mark, %d retrieval timeouts: %s\n",
						ds.Name, p.Profile, p.Candidates, p.Searches, measure.Ms(p.Latency.P99), int(p.DegradedFrac*float64(p.Searches)+0.5), p.DegradedUnmarked, p.Timeouts, verdict)
				}
			}
			points = append(points, pts...)
		}
		if err := h.Close(); err != nil {
			return err
		}
	}
	if *out == "" {
		return nil
	}
	allReal := true
	for _, r := range real {
		allReal = allReal && r
	}
	weights := "Models: real exports (real_weights true): quality columns are meaningful."
	if !allReal {
		weights = "**Models with real_weights = false are generated random-weight stand-ins (bench models): for those rows the dense and rerank quality columns (ndcg@10, recall@100, mrr@10) are meaningless — only latency, degradation and reranked-count figures are real. The bm25 row does not use a model. Pass real exports with --models-root or --embed-dir/--rerank-dir to get real quality figures.**"
	}
	rep := report.Report{
		Title:   "Hybrid engine: configuration matrix and rerank budget",
		Command: "bench hybrid " + strings.Join(args, " "),
		Notes: append([]string{
			weights,
			fmt.Sprintf("The corpus is committed once per run (title + text); the embedder truncates documents to %d tokens (max-doc-tokens). bm25 runs on an engine with no embedder (BM25 only, tied scores in trec_eval order as lexical.md); dense is weighted fusion with α = 1; rrf, weighted-α, relative fuse %d candidates per retriever; X+PROFILE reranks X's candidates with the cross-encoder PROFILE under a %v budget per search; rrf+mmr-0.7 selects hits by MMR with λ = 0.7.", *maxDocTokens, opt.Candidates, opt.Budget),
			"Reranking 100 candidates without a budget takes seconds per query with MiniLM-sized cross-encoders on a 2-core CPU, so the rerank rows are budgeted: degraded_frac is the share of searches whose reranking the budget cut short (Result.Degraded), mean_reranked the mean number of candidates scored (a prefix in fused order, the rest follow unreranked).",
			"Queries run sequentially through engine.Search after unrecorded warm-up searches (model load, rerank cost estimate); latency is Result.Timings.Total (wall time for timeouts); stage columns are means. timeouts counts budgeted searches whose retrieval (query embedding, BM25, dense) itself missed the budget, which the engine reports as an error; they count as returning nothing.",
		}, notes...),
		Config:  opt,
		Columns: append(bench.HybridColumns, "commit_s"),
		Rows:    rows,
	}
	if len(sweepRows) > 0 {
		rep.Notes = append(rep.Notes, "![budget sweep: latency and candidates reranked against the budget](hybrid_budget.svg)", "Budget sweep (table rows named sweep …, plot hybrid_budget.svg): searches cycle through the judged queries, rrf fusion, all candidates offered to the reranker; max_ms is the slowest search; degraded_unmarked counts searches whose Degraded flag disagrees with reranked < candidates (must be 0); timeouts counts searches whose retrieval itself (query embedding, BM25, dense) missed the budget, which the engine reports as an error, not a degraded result. Done-when: budget 100 ms, balanced, 100 candidates, 200 searches → p99 ≤ 110 ms.")
		rep.Columns = append(rep.Columns, "max_ms", "searches", "candidates", "degraded_unmarked", "timeouts")
		rep.Rows = append(rep.Rows, sweepRows...)
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		svg := filepath.Join(*out, "hybrid_budget.svg")
		if err := report.WriteSVGFile(svg, bench.BudgetPlot(points)...); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote", svg)
	}
	path, err := report.Write(*out, "hybrid", rep)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "wrote", path)
	return nil
}

func joinClose(err error, h *bench.HybridBench) error {
	if cerr := h.Close(); cerr != nil {
		return fmt.Errorf("%w (close: %v)", err, cerr)
	}
	return err
}
