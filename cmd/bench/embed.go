package main

import (
	"context"

	"github.com/hybrank/hybrank/models"
)

func init() {
	register(subcommand{
		name:    "embed",
		summary: "bi-encoder texts/s, tokens/s, latency and effective GFLOP/s vs measured peak (profile embed)",
		run: func(ctx context.Context, args []string) error {
			return runModelBench(ctx, "embed", models.KindEmbedder, args)
		},
	})
}
