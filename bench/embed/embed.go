package embed

import (
	"context"

	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/throughput"
	"github.com/hybrank/hybrank/models"
)

// Config configures `bench embed`: a throughput.Spec of a bi-encoder,
// run once or over a Sweep. Kind must be models.KindEmbedder.
type Config = throughput.Config

// Result is the rows of Run.
type Result = throughput.Result

// DefaultConfig is one run of the embed profile (all-MiniLM-L6-v2 shape):
// 64 texts of 128 tokens per call, batches of 16,384 tokens, one thread
// per core. Pairs is the number of texts per call and DocTokens their
// length; QueryTokens is unused.
func DefaultConfig() Config { return throughput.DefaultConfig(models.KindEmbedder) }

// DefaultSweep is embed × batches of 1, 4, 16, 64 × one and two threads ×
// 128 and 256 tokens.
func DefaultSweep() throughput.Sweep { return throughput.DefaultSweep(models.KindEmbedder) }

// Run measures cfg's bi-encoders (throughput.Run): texts/s are reported as
// pairs_per_s.
func Run(ctx context.Context, cfg Config) (Result, error) {
	return throughput.RunKind(ctx, cfg, models.KindEmbedder)
}

// Report renders res as bench/results/embed.md with embed.svg.
func Report(cfg Config, res Result, command string) report.Report {
	return throughput.Report("embed", cfg, res, command)
}
