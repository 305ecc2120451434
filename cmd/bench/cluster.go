package main

import (
	"context"

	"github.com/hybrank/hybrank/bench/cluster"
)

func init() {
	register(subcommand{
		name: "cluster",
		summary: "on the cluster `make cluster` started: load a BEIR dataset, hybrid search with and without reranking " +
			"beside the engine, the Python peer swapped in for the sidecars, and node and sidecar kills under load",
		run: runCluster,
	})
}

func runCluster(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("cluster")
	cfg := cluster.DefaultConfig()
	quick := fs.Bool("quick", false, "smoke run: 1,000 documents, 30 queries, short peer and fault phases")
	fs.StringVar(&cfg.StatePath, "state", cfg.StatePath, "state file of the running cluster (make cluster writes it)")
	fs.StringVar(&cfg.Dataset, "data", cfg.Dataset, "BEIR dataset folder")
	docs := fs.Int("docs", -1, "documents (0 = all; judged ones first; default all, --quick 1000)")
	queries := fs.Int("queries", -1, "judged queries (0 = all; default all, --quick 30)")
	fs.StringVar(&cfg.Collection, "collection", "", `Weaviate class name (default "Bench" + the dataset's name)`)
	fs.StringVar(&cfg.Consistency, "consistency", cfg.Consistency, "consistency level of every import and read: ONE, QUORUM or ALL")
	fs.IntVar(&cfg.Shards, "shards", cfg.Shards, "shards of the collection")
	fs.IntVar(&cfg.Replicas, "replicas", cfg.Replicas, "replication factor of the collection")
	fs.BoolVar(&cfg.AsyncReplication, "async-replication", cfg.AsyncReplication, "async replication on the collection")
	fs.IntVar(&cfg.BatchSize, "batch", cfg.BatchSize, "objects per batch request of the load")
	fs.IntVar(&cfg.Importers, "importers", cfg.Importers, "concurrent batch requests of the load")
	fs.StringVar(&cfg.Fused, "fusion", cfg.Fused, "bench hybrid setup whose fusion the hybrid searches use (rrf, weighted-0.3/0.5/0.7, relative)")
	fs.StringVar(&cfg.Profile, "profile", cfg.Profile, "reranker profile the sidecars serve (the engine reranks with the same)")
	fs.StringVar(&cfg.Analysis, "analysis", cfg.Analysis, `BM25 analysis in Weaviate: "hybrank" (hybrank's /analyze terms in a whitespace property, plus rows on Weaviate's own) or "weaviate" (its word tokens only)`)
	fs.IntVar(&cfg.Limit, "limit", cfg.Limit, "hits per search")
	rerankLimit := fs.Int("rerank-limit", -1, "hits of a reranked search, all reranked (default 20)")
	clients := intsFlag(cfg.Clients)
	fs.Var(&clients, "clients", "concurrent clients of the hybrid searches (the single retrievers run at the first)")
	fs.DurationVar(&cfg.RequestTimeout, "timeout", cfg.RequestTimeout, "limit of one request to Weaviate")
	fs.BoolVar(&cfg.Engine.Enabled, "engine", cfg.Engine.Enabled, "run hybrank's engine in process beside the cluster")
	fs.StringVar(&cfg.Engine.Models.Root, "models-root", "", "engine: folder with one model dir per profile; default $HYBRANK_MODELS")
	fs.StringVar(&cfg.Engine.EmbedDir, "embed-dir", "", "engine: embedder model dir (default the real all-MiniLM-L6-v2 of make models)")
	fs.StringVar(&cfg.Engine.CacheDir, "cache", cfg.Engine.CacheDir, `engine: folder of cached document vectors ("" = none)`)
	fs.BoolVar(&cfg.Peer.Enabled, "peer", cfg.Peer.Enabled, "swap the Python peer in for the sidecars and compare")
	peerDocs := fs.Int("peer-docs", -1, "peer: documents imported through each sidecar kind (default 1000, --quick 200)")
	peerQueries := fs.Int("peer-queries", -1, "peer: reranked searches through each (default 100, --quick 20)")
	fs.IntVar(&cfg.Peer.RerankClients, "peer-clients", cfg.Peer.RerankClients, "peer: concurrent clients of the reranked searches")
	fs.BoolVar(&cfg.Peer.Int8, "peer-int8", cfg.Peer.Int8, "peer: also drive node 0's sidecar with int8 models (serve --quantize int8)")
	fs.BoolVar(&cfg.Faults.Enabled, "faults", cfg.Faults.Enabled, "kill and restart a node, then a sidecar, under load")
	fs.IntVar(&cfg.Faults.Queriers, "fault-clients", cfg.Faults.Queriers, "faults: concurrent search clients")
	fs.IntVar(&cfg.Faults.Importers, "fault-importers", cfg.Faults.Importers, "faults: concurrent import clients")
	fs.IntVar(&cfg.Faults.Node, "fault-node", cfg.Faults.Node, "faults: index of the node killed")
	fs.IntVar(&cfg.Faults.Sidecar, "fault-sidecar", cfg.Faults.Sidecar, "faults: index of the node whose sidecar is killed")
	fs.BoolVar(&cfg.Progress, "progress", false, "show progress even when stderr is not a terminal")
	var o output
	o.register(fs, "cluster.md")
	if err := parse(fs, args); err != nil {
		return err
	}
	base := cluster.DefaultConfig()
	if *quick {
		base = base.Quick()
	}
	pick := func(flagV, def int) int {
		if flagV >= 0 {
			return flagV
		}
		return def
	}
	cfg.Docs, cfg.Queries = pick(*docs, base.Docs), pick(*queries, base.Queries)
	cfg.RerankLimit, cfg.Warmup = pick(*rerankLimit, base.RerankLimit), base.Warmup
	cfg.Peer.Docs, cfg.Peer.Queries = pick(*peerDocs, base.Peer.Docs), pick(*peerQueries, base.Peer.Queries)
	cfg.Peer.Sample, cfg.Peer.Direct = base.Peer.Sample, base.Peer.Direct
	cfg.Faults.Steady, cfg.Faults.Down, cfg.Faults.CatchUp = base.Faults.Steady, base.Faults.Down, base.Faults.CatchUp
	cfg.Clients = clients
	cfg.Log = cl.stderr
	name := "cluster"
	if *quick {
		name = "cluster-quick"
	}
	res, err := cluster.Run(ctx, cfg, nil)
	rep := cluster.Report(cfg, res, command("cluster", args))
	if err != nil {
		return o.failed(cl, name, rep, err)
	}
	return o.finish(cl, name, rep)
}
