package main

import (
	"context"

	"github.com/hybrank/hybrank/models"
)

func init() {
	register(subcommand{
		name:    "embed",
		summary: "bi-encoder texts/s, tokens/s, latency and effective GFLOP/s vs measured peak (profile embed)",
		run: func(ctx context.Context, cl *cli, args []string) error {
			return runModelBench(ctx, cl, "embed", models.KindEmbedder, args)
		},
	})
}
