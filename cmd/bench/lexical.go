package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/postings"
)

func init() {
	register(subcommand{
		name:    "lexical",
		summary: "BM25 quality (nDCG@10, recall@100, MRR@10), QPS, latency and index size on BEIR or synthetic corpora",
		run:     runLexical,
	})
}

// listFlag collects repeated and comma-separated values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func runLexical(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("lexical", flag.ContinueOnError)
	var data, synth listFlag
	fs.Var(&data, "data", "BEIR dataset folder (repeatable or comma list)")
	fs.Var(&synth, "synthetic", "synthetic corpus sizes in docs (repeatable or comma list, e.g. 10000,100000,1000000)")
	opt := bench.DefaultLexicalOptions()
	variant := fs.String("variant", string(postings.Lucene), "BM25 variant: lucene, robertson, atire, bm25l, bm25+")
	variants := fs.String("variants", "", `comma list of variants, or "all" (overrides --variant)`)
	fs.Float64Var(&opt.Index.K1, "k1", opt.Index.K1, "BM25 k1")
	fs.Float64Var(&opt.Index.B, "b", opt.Index.B, "BM25 b")
	fs.Float64Var(&opt.Index.Delta, "delta", opt.Index.Delta, "delta of bm25l / bm25+")
	fs.IntVar(&opt.K, "k", opt.K, "hits per query")
	fs.IntVar(&opt.Rounds, "rounds", opt.Rounds, "timed rounds over all queries; QPS is the best")
	fs.BoolVar(&opt.Exhaustive, "exhaustive", false, "score every posting (no MaxScore pruning)")
	fs.BoolVar(&opt.Eval.DropIdenticalIDs, "drop-identical-ids", false, "drop retrieved docs whose id equals the query id before scoring (BEIR's ignore_identical_ids; default keeps them, as trec_eval and bm25s's figures do)")
	fs.IntVar(&opt.ChunkDocs, "chunk", 0, "synthetic: commit every N docs, then Rebuild (0 = one bulk batch)")
	fs.BoolVar(&opt.Progress, "progress", false, "show progress even when stderr is not a terminal")
	seed := fs.Uint64("seed", 1, "synthetic corpus seed")
	synthQueries := fs.Int("synthetic-queries", 1000, "queries per synthetic corpus")
	jsonOnly := fs.Bool("json", false, "print only JSON lines (no table)")
	out := fs.String("out", "bench/results", `folder for the report and lexical_scaling.svg ("" = do not write)`)
	name := fs.String("name", "lexical", "report file name (without .md) under --out")
	var notes listFlag
	fs.Func("note", "extra paragraph for the report (repeatable), e.g. measurement conditions", func(v string) error {
		notes = append(notes, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(data) == 0 && len(synth) == 0 {
		return fmt.Errorf("give --data DIR and/or --synthetic N")
	}
	vs := []string{*variant}
	if *variants == "all" {
		vs = []string{"lucene", "robertson", "atire", "bm25l", "bm25+"}
	} else if *variants != "" {
		vs = strings.Split(*variants, ",")
	}
	var sizes []int
	for _, s := range synth {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("--synthetic %q: want a positive integer", s)
		}
		sizes = append(sizes, n)
	}

	enc := json.NewEncoder(os.Stdout)
	var rows []map[string]any
	var results []bench.LexicalResult
	emit := func(r bench.LexicalResult) error {
		results = append(results, r)
		rows = append(rows, r.Row())
		return enc.Encode(r)
	}
	for _, dir := range data {
		ds, err := eval.LoadBEIR(dir)
		if err != nil {
			return err
		}
		for _, v := range vs {
			o := opt
			o.Index.Variant = postings.Variant(strings.TrimSpace(v))
			r, err := bench.RunLexicalBEIR(ctx, ds, o)
			if err != nil {
				return err
			}
			if err := emit(r); err != nil {
				return err
			}
		}
	}
	for _, n := range sizes {
		cfg := bench.DefaultSyntheticConfig(n)
		cfg.Seed, cfg.Queries = *seed, *synthQueries
		syn, err := bench.NewSynthetic(cfg)
		if err != nil {
			return err
		}
		for _, v := range vs {
			o := opt
			o.Index.Variant = postings.Variant(strings.TrimSpace(v))
			r, err := bench.RunLexicalSynthetic(ctx, syn, o)
			if err != nil {
				return err
			}
			if err := emit(r); err != nil {
				return err
			}
		}
	}
	if !*jsonOnly {
		fmt.Println()
		fmt.Println(bench.LexicalTable(rows))
	}
	if *out == "" {
		return nil
	}
	rep := bench.LexicalReport(opt, "bench lexical "+strings.Join(args, " "), rows)
	rep.Notes = append(rep.Notes, notes...)
	path, err := report.Write(*out, *name, rep)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "wrote", path)
	if len(sizes) > 0 {
		svg := filepath.Join(*out, "lexical_scaling.svg")
		if err := bench.WriteLexicalScaling(svg, results); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote", svg)
	}
	return nil
}
