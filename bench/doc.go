// Package bench is the root of hybrank's benchmark harness. It holds only
// ErrBadOption, the error every benchmark's Config.Validate wraps; the
// harness lives in subpackages, one layer each, imports pointing down:
//
//	cmd/bench                      flags → Config → Run → Report, per subcommand
//	lexical, dense, tokenize,      one driver per benchmark: Run(ctx, Config) (Result, error),
//	rerank, embed, hybrid, serve,  Config with DefaultConfig and Validate (and Targets where the
//	ingest, longdoc,               benchmark has them), Report(Config, Result, command)
//	modeldir (bench models)
//	throughput                     the measuring engine shared by rerank, embed (and serve's model)
//	loadgen                        the one closed-loop HTTP load generator (no server import)
//	modeldir                       model directories: resolution, generation, real or generated
//	peers                          the peers (bm25s, faiss-cpu, ONNX Runtime's Python package) run beside hybrank
//	eval, synth                    BEIR datasets and metrics; seeded synthetic corpora and vectors
//	vcache                         the on-disk vector cache: a corpus embedded once per model
//	report, measure                reports, tables, plots, machine info, checks; latency, rounding, progress
//
// # Results
//
// Each driver's rows are structs whose JSON tags name the values and whose
// `table` tags mark the report's columns (package report), so one
// definition serves the --json lines, the markdown table and the raw JSON
// of bench/results/NAME.md. Targets (PASS/FAIL thresholds) are fields of
// the drivers' configs, turned into report.Checks by one function per
// driver.
//
// # Concurrency
//
// Drivers measure sequentially on the calling goroutine (load generators
// and model runtimes use their own goroutines and threads) so figures are
// not disturbed by the harness; configs and results are plain values.
package bench
