package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/internal/artifacts"
)

func init() {
	register(subcommand{
		name:    "all",
		summary: "the main job: generate models, then every benchmark on the default data (what `make bench` runs)",
		run:     runAll,
	})
}

// step is one subcommand invocation of the main job.
type step struct {
	name string   // label printed in the log
	cmd  string   // subcommand
	args []string // its flags
	data bool     // needs the BEIR datasets
	real bool     // needs the real models (make models)
	// est is the step's built-in wall-time estimate on a 2-core machine
	// (see cost); a finished run's all.md replaces it in the next plan.
	est time.Duration
}

// cost is a step's built-in estimate: seconds is its wall time in `bench
// all --quick` on a 2-core AMD EPYC (AVX-512 VNNI, 2026-12-02,
// bench/results/all-quick.md, with other builds and tests sharing the
// machine: upper bounds), and for the full job that time times work, the
// full step's work over the quick one's (corpus sizes, query counts,
// durations, models). A finished run's all.md replaces them in the next
// plan, and the remaining time scales with how the run compares.
func cost(quick bool, seconds, work float64) time.Duration {
	if !quick {
		seconds *= work
	}
	return time.Duration(seconds * float64(time.Second))
}

// allSteps lists the main job. Every step is an ordinary subcommand run,
// so any one of them can be repeated by hand with the printed command line.
// Without the datasets (haveData false) the rerank step has no real pairs.
func allSteps(datasets, out, models string, quick, haveData bool) []step {
	steps := mainSteps(datasets, out, models, quick, haveData)
	return append(steps, realSteps(datasets, out, artifacts.RealModels(), models, quick)...)
}

// realSteps are the real-model steps: the MTEB reproduction of every real
// embedder (float32, its int8 export and hybrank's own int8 quantization)
// on every dataset, HNSW against faiss on real
// sentence vectors, the hybrid matrix per float32 embedder with the fusion
// chosen on cisi, and long documents (all-MiniLM-L6-v2 scoring, with the
// generated cross-encoder of models for speed). --quick keeps
// all-MiniLM-L6-v2 on scifact and a smaller long-document collection.
func realSteps(datasets, out, real, models string, quick bool) []step {
	ds := func(names ...string) string {
		for i, n := range names {
			names[i] = filepath.Join(datasets, n)
		}
		return strings.Join(names, ",")
	}
	rm := func(names ...string) string {
		for i, n := range names {
			names[i] = filepath.Join(real, n)
		}
		return strings.Join(names, ",")
	}
	fp32 := []string{"all-minilm-l6-v2", "bge-small-en-v1.5", "e5-small-v2"}
	denseModels, denseData, passages := rm("all-minilm-l6-v2", "all-minilm-l6-v2-q", "bge-small-en-v1.5", "bge-small-en-v1.5-q", "e5-small-v2", "e5-small-v2-q"), ds("scifact", "cisi", "cran"), "0"
	if quick {
		fp32, denseModels, denseData, passages = fp32[:1], rm("all-minilm-l6-v2"), ds("scifact"), "20000"
	}
	steps := []step{
		{name: "dense real (MTEB reproduction, float32 and int8)", cmd: "dense", data: true, real: true, est: cost(quick, 776, 11), // 6 models (bge, e5 twice MiniLM's layers), 1.55× the documents
			args: []string{"--beir", "--data", denseData, "--model", denseModels, "--int8", "--quantize-cache", filepath.Join(models, "int8"), "--out", out, "--name", "dense_real"}},
		{name: "dense sentences (real all-MiniLM-L6-v2 vectors, HNSW vs faiss)", cmd: "dense", data: true, real: true, est: cost(quick, 374, 2.4), // 48,717 passages, not 20,000
			args: []string{"--passages", "--data", ds("scifact"), "--model", rm("all-minilm-l6-v2"), "--max-passages", passages,
				"--m", "16", "--ef", "16,32,64,128", "--out", out}},
	}
	longdoc := []string{"--data", ds("scifact"), "--embedder", rm("all-minilm-l6-v2"), "--models-root", models, "--out", out}
	if quick {
		longdoc = append(longdoc, "--max-queries", "20", "--distractors", "10", "--strides", "256", "--rerank-queries", "1")
	}
	steps = append(steps, step{name: "longdoc (buried scifact abstracts: truncation vs chunking)", cmd: "longdoc", data: true, real: true,
		est: cost(quick, 127, 8), args: longdoc}) // 5× the queries, 3× the distractors, 2 strides, 3 rerank queries
	for i, m := range fp32 {
		work := 1.0 // bge and e5 have twice MiniLM's layers
		if i > 0 {
			work = 2
		}
		steps = append(steps, step{name: "hybrid real (" + m + ", fusion chosen on cisi)", cmd: "hybrid", data: true, real: true, est: cost(quick, 359, work),
			args: []string{"--data", ds("cisi", "cran", "scifact"), "--embed-dir", rm(m), "--max-doc-tokens", "0", "--tune-on", "cisi",
				"--configs", "bm25,dense,rrf,weighted-0.3,weighted-0.5,weighted-0.7,relative,rrf+mmr-0.7", "--out", out, "--name", "hybrid_real_" + m}})
	}
	return steps
}

// mainSteps are the steps on synthetic data, the datasets and generated
// models.
func mainSteps(datasets, out, models string, quick, haveData bool) []step {
	ds := func(name string) string { return filepath.Join(datasets, name) }
	realData := ds("scifact")
	if !haveData {
		realData = ""
	}
	synth := []string{"--synthetic", "10000", "--synthetic", "100000", "--synthetic", "1000000"}
	denseN, rerankPairs, hybridQueries, serveDur := "100000", "64", "200", "30s"
	replay := "1000"                                                                    // searches of the Zipf query log replayed behind the model caches (off, 64 MB)
	rerankQueries := "20"                                                               // real scifact queries × their BM25 top 32, beside the peer
	rerankInt8 := []string{"--int8", "--quantize-cache", filepath.Join(models, "int8")} // int8 vs float32 on those pairs
	if !haveData {
		rerankInt8 = nil // the int8 rows are measured on the real pairs only
	}
	serveOverload := []string{"--overload"} // 64 clients for 60 s against small queues
	if quick {
		synth = []string{"--synthetic", "10000", "--synthetic", "100000"}
		denseN, rerankPairs, hybridQueries, serveDur, replay = "20000", "32", "50", "10s", "200"
		rerankQueries = "5"
		serveOverload = nil
	}
	return []step{
		{name: "models", cmd: "models", est: cost(quick, 2, 1), args: []string{"--out", models}},
		{name: "lexical (BEIR, lucene)", cmd: "lexical", data: true, est: cost(quick, 5, 1),
			args: []string{"--data", ds("scifact"), "--data", ds("cisi"), "--data", ds("cran"), "--out", out, "--name", "lexical"}},
		{name: "lexical (scifact, five variants)", cmd: "lexical", data: true, est: cost(quick, 13, 1),
			args: []string{"--data", ds("scifact"), "--variants", "all", "--out", out, "--name", "lexical_variants"}},
		{name: "lexical (synthetic scaling)", cmd: "lexical", est: cost(quick, 16, 10), // + 1M docs
			args: append(synth, "--out", out, "--name", "lexical_synthetic")},
		{name: "tokenize (ours vs HF)", cmd: "tokenize", data: true, est: cost(quick, 20, 1),
			args: []string{"--data", ds("scifact"), "--out", out}},
		{name: "rerank (scifact pairs beside the peer; profiles × batch × threads × doc tokens)", cmd: "rerank", est: cost(quick, 2296, 2.5), // 4× the real pairs, 2× the sweep's
			args: append([]string{"--sweep", "--models-root", models, "--real-data", realData, "--real-queries", rerankQueries, "--pairs", rerankPairs, "--sweep-batches", "1,4,16,32", "--sweep-threads", "1,2", "--sweep-doc-tokens", "128,256", "--out", out}, rerankInt8...)},
		{name: "embed (batch × threads × tokens)", cmd: "embed", est: cost(quick, 275, 2), // 2× the pairs
			args: []string{"--sweep", "--models-root", models, "--pairs", rerankPairs, "--sweep-batches", "1,4,16,32", "--sweep-threads", "1,2", "--sweep-doc-tokens", "128,256", "--out", out}},
		{name: "dense (HNSW M × ef vs exact)", cmd: "dense", est: cost(quick, 51, 6), // 5× the vectors
			args: []string{"--n", denseN, "--dim", "384", "--m", "16", "--ef", "16,32,64,128", "--out", out}},
		{name: "hybrid (scifact, fusion × rerank profiles)", cmd: "hybrid", data: true, est: cost(quick, 814, 2), // 4× the queries, 5× the replay; the budget sweep alike
			args: []string{"--data", ds("scifact"), "--models-root", models, "--queries", hybridQueries,
				"--budget-sweep", "50ms,100ms,200ms,400ms", "--rerank", "balanced,fast,fast>balanced", "--sweep-searches", "200",
				"--replay", replay, "--out", out}},
		{name: "ingest (fsync per commit vs interval; search during a 100K ingest)", cmd: "ingest", data: true, est: cost(quick, 392, 1),
			args: []string{"--data", ds("scifact"), "--out", out}},
		{name: "serve (batching on/off, /search vs /v1/rerank, balanced)", cmd: "serve", data: true, est: cost(quick, 170, 3), // 6 runs of the duration, + 60 s of overload
			args: append([]string{"--models-root", models, "--profile", "balanced", "--clients", "16", "--docs", "8", "--doc-tokens", "100",
				"--batching", "both", "--duration", serveDur, "--search", ds("scifact"), "--out", out}, serveOverload...)},
	}
}

func runAll(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("all")
	datasets := fs.String("datasets", "../shared/datasets", "folder of BEIR datasets (scifact, cisi, cran); steps that need it are skipped when absent")
	out := fs.String("out", "bench/results", "folder for the reports (and all.md / all-quick.md: the job's steps and their times)")
	models := fs.String("models", ".deps/models", "folder for the generated model directories (one per profile)")
	quick := fs.Bool("quick", false, "smaller corpora and shorter runs (minutes instead of hours)")
	var only listFlag
	fs.Var(&only, "only", "comma list of step commands to run (default all), e.g. lexical,rerank")
	keepGoing := fs.Bool("keep-going", true, "run the remaining steps after one fails (the exit status still reports the failure)")
	planOnly := fs.Bool("plan", false, "print the plan (steps, estimated times) and stop")
	var o output
	o.registerJSON(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	haveData := true
	if _, err := os.Stat(filepath.Join(*datasets, "scifact", "corpus.jsonl")); err != nil {
		haveData = false
		fmt.Fprintf(cl.stderr, "bench all: no datasets at %s: running the synthetic and generated-model steps only\n", *datasets)
	}
	_, err := os.Stat(filepath.Join(artifacts.RealModels(), "all-minilm-l6-v2"))
	haveReal := err == nil
	var steps []step
	for _, s := range allSteps(*datasets, *out, *models, *quick, haveData) {
		switch {
		case len(only) > 0 && !slices.Contains(only, s.cmd):
			continue
		case s.data && !haveData:
			fmt.Fprintf(cl.stderr, "== skip %s: needs %s\n", s.name, *datasets)
			continue
		case s.real && !haveReal:
			fmt.Fprintf(cl.stderr, "== skip %s: needs the real models in %s (make models)\n", s.name, artifacts.RealModels())
			continue
		}
		if o.json {
			s.args = append(s.args, "--json")
		}
		steps = append(steps, s)
	}
	name := allReportName(*quick)
	plan := measure.NewPlan(cl.stderr, planSteps(steps, filepath.Join(*out, name+".md")), nil)
	plan.Print()
	if *planOnly || len(steps) == 0 {
		return nil
	}
	var failed []string
	rows := make([]stepRow, 0, len(steps))
	for i, s := range steps {
		plan.Begin(i)
		start := time.Now()
		err := runStep(ctx, cl, s)
		took := time.Since(start)
		plan.End(i, took, err)
		rows = append(rows, newStepRow(s, took, err))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failed = append(failed, s.name)
			if !*keepGoing {
				break
			}
		}
	}
	if *out != "" && len(only) == 0 {
		// A partial job (--only) would replace the whole job's times.
		if err := writeAllReport(cl, *out, name, args, rows, plan); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d step(s) failed: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// runStep runs one step as the subcommand it names, logging its command
// line.
func runStep(ctx context.Context, cl *cli, s step) error {
	c, ok := subcommands[s.cmd]
	if !ok {
		return fmt.Errorf("step %s: unknown subcommand %q", s.name, s.cmd)
	}
	fmt.Fprintf(cl.stderr, "   %s\n", command(s.cmd, s.args))
	return c.run(ctx, cl, s.args)
}

// allReportName is the report of the main job's steps and times: one for
// the full job, one for --quick.
func allReportName(quick bool) string {
	if quick {
		return "all-quick"
	}
	return "all"
}

// stepRow is one step of the main job's report (OUT/all.md).
type stepRow struct {
	Step      string  `json:"step" table:""`
	Status    string  `json:"status" table:""`
	WallS     float64 `json:"wall_s" table:"wall s"`
	EstimateS float64 `json:"estimate_s" table:"built-in estimate s"`
	Command   string  `json:"command" table:""`
	Error     string  `json:"error,omitempty"`
}

func newStepRow(s step, took time.Duration, err error) stepRow {
	r := stepRow{Step: s.name, Status: "done", WallS: measure.Round(took.Seconds(), 1), EstimateS: s.est.Seconds(), Command: command(s.cmd, s.args)}
	if err != nil {
		r.Status, r.Error = "failed", err.Error()
	}
	return r
}

// planSteps gives each step its estimate: its wall time in the last
// report of the job at last (when that run finished the step), else the
// built-in figure.
func planSteps(steps []step, last string) []measure.PlanStep {
	prev := map[string]float64{}
	src := ""
	if w, err := report.Read(last); err == nil {
		for _, raw := range w.Rows {
			var r stepRow
			if json.Unmarshal(raw, &r) == nil && r.Status == "done" {
				prev[r.Step] = r.WallS
			}
		}
		cpu, _, _ := strings.Cut(w.Machine, " | ")
		src = fmt.Sprintf("last run %s, %s", w.Generated.Format("2006-01-02"), cpu)
	}
	out := make([]measure.PlanStep, len(steps))
	for i, s := range steps {
		out[i] = measure.PlanStep{Name: s.name, Estimate: s.est, Source: "built-in"}
		if sec, ok := prev[s.name]; ok {
			out[i].Estimate, out[i].Source = time.Duration(sec*float64(time.Second)), src
		}
	}
	return out
}

// writeAllReport writes the job's steps, outcomes and times as OUT/name.md:
// what `make bench` costs, and the next run's estimates.
func writeAllReport(cl *cli, out, name string, args []string, rows []stepRow, plan *measure.Plan) error {
	var total float64
	for _, r := range rows {
		total += r.WallS
	}
	rep := report.Report{
		Title:   "bench all: the main job's steps and wall times",
		Command: command("all", args),
		Notes: []string{
			fmt.Sprintf("%d steps, %s of wall time in all (the plan estimated %s).", len(rows), measure.Approx(time.Duration(total*float64(time.Second))), measure.Approx(plan.Total())),
			"The next `bench all` with the same --out takes its plan's estimates from this file's wall times; the built-in estimates are for a 2-core machine.",
		},
		Columns: report.Columns(stepRow{}),
		Rows:    report.Rows(rows),
	}
	path, err := report.Write(out, name, rep)
	if err != nil {
		return err
	}
	fmt.Fprintln(cl.stderr, "wrote", path)
	return nil
}
