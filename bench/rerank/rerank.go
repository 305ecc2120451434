package rerank

import (
	"context"

	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/throughput"
	"github.com/hybrank/hybrank/models"
)

// Config configures `bench rerank`: a throughput.Spec of a cross-encoder,
// run once or over a Sweep. Kind must be models.KindCrossEncoder.
type Config = throughput.Config

// Result is the rows of Run.
type Result = throughput.Result

// DefaultConfig is one run of the balanced profile: 64 pairs of 128
// document tokens per call, batches of 16,384 tokens, one thread per core.
func DefaultConfig() Config { return throughput.DefaultConfig(models.KindCrossEncoder) }

// DefaultSweep is fast, balanced and accurate × batches of 1, 4, 16, 64 ×
// one and two threads × 128 and 256 document tokens.
func DefaultSweep() throughput.Sweep { return throughput.DefaultSweep(models.KindCrossEncoder) }

// Run measures cfg's cross-encoders (throughput.Run).
func Run(ctx context.Context, cfg Config) (Result, error) {
	return throughput.RunKind(ctx, cfg, models.KindCrossEncoder)
}

// Report renders res as bench/results/rerank.md with rerank.svg.
func Report(cfg Config, res Result, command string) report.Report {
	return throughput.Report("rerank", cfg, res, command)
}
