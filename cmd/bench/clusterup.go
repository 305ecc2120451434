package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hybrank/hybrank/bench/cluster"
)

func init() {
	register(subcommand{
		name: "cluster-up",
		summary: "start a local Weaviate cluster (3 nodes on 127.0.0.1, one hybrank serve per node as its inference sidecar) " +
			"and wait until every node is ready; a no-op when it runs (make cluster)",
		run: runClusterUp,
	})
}

func runClusterUp(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("cluster-up")
	o := cluster.DefaultOptions()
	fs.StringVar(&o.Dir, "dir", o.Dir, "cluster folder: state file "+cluster.StateFile+", node data, logs, tiktoken/")
	fs.StringVar(&o.WeaviateBin, "weaviate", o.WeaviateBin, "weaviate-server binary (make cluster builds the pinned version)")
	fs.StringVar(&o.ServeBin, "serve", o.ServeBin, "hybrank serve binary, run once per node as its sidecar")
	fs.IntVar(&o.Nodes, "nodes", o.Nodes, "Weaviate nodes (each with its sidecar)")
	ports := map[string]func(p *cluster.Ports) *int{
		"http":      func(p *cluster.Ports) *int { return &p.HTTP },
		"grpc":      func(p *cluster.Ports) *int { return &p.GRPC },
		"gossip":    func(p *cluster.Ports) *int { return &p.Gossip },
		"data":      func(p *cluster.Ports) *int { return &p.Data },
		"raft":      func(p *cluster.Ports) *int { return &p.Raft },
		"metrics":   func(p *cluster.Ports) *int { return &p.Metrics },
		"profiling": func(p *cluster.Ports) *int { return &p.Profiling },
		"sidecar":   func(p *cluster.Ports) *int { return &p.Sidecar },
	}
	given := map[string]*sizesFlag{}
	for name := range ports {
		given[name] = new(sizesFlag)
		usage := "node i's " + name + " port, comma list by node (0 or missing: a free one)"
		switch name {
		case "gossip":
			usage += "; the data port defaults to gossip+1"
		case "raft":
			usage += "; its RPC port is raft+1 (Weaviate's rule on one host)"
		}
		fs.Var(given[name], name+"-ports", usage)
	}
	fs.StringVar(&o.Sidecar.EmbedModel, "embed-model", o.Sidecar.EmbedModel, "sidecar embedder model directory")
	fs.StringVar(&o.Sidecar.RerankModel, "rerank-model", o.Sidecar.RerankModel, "sidecar cross-encoder model directory")
	fs.StringVar(&o.Sidecar.ORTLib, "ort-lib", o.Sidecar.ORTLib, "ONNX Runtime library for the sidecars")
	fs.IntVar(&o.Sidecar.CacheMB, "cache-mb", o.Sidecar.CacheMB, "sidecar --cache-mb (MiB per model)")
	fs.IntVar(&o.Sidecar.Threads, "threads", o.Sidecar.Threads, "sidecar --threads (intra-op threads per model call)")
	fs.IntVar(&o.Sidecar.Pool, "pool", o.Sidecar.Pool, "sidecar --pool (model calls at once; threads × pool is also the peer's torch threads; 0: serve's default, 1)")
	fs.Var((*repeated)(&o.Sidecar.Args), "serve-arg", "extra flag for every sidecar's serve (repeatable)")
	fs.StringVar(&o.InferencePath, "inference-path", o.InferencePath, "path prefix of Weaviate's inference protocols on a sidecar (the nodes' TRANSFORMERS_/RERANKER_INFERENCE_API)")
	fs.StringVar(&o.SidecarReadyPath, "sidecar-ready-path", o.SidecarReadyPath, "path Up waits on under a sidecar's URL (default: inference path + /.well-known/ready)")
	fs.StringVar(&o.TiktokenDir, "tiktoken", o.TiktokenDir, "text2vec-openai's tokenizer files (default: DIR/tiktoken)")
	modules := listFlag(nil)
	fs.Var(&modules, "modules", fmt.Sprintf("Weaviate ENABLE_MODULES (default %v)", o.Modules))
	fs.StringVar(&o.ModuleKey, "module-key", o.ModuleKey, "API key the nodes' OpenAI and Cohere modules send to a baseURL (hybrank checks it only with serve --api-key)")
	fs.Var((*repeated)(&o.Env), "env", "KEY=VALUE added to every node's environment (repeatable)")
	fs.DurationVar(&o.SidecarTimeout, "sidecar-timeout", o.SidecarTimeout, "longest wait for the sidecars to load their models")
	fs.DurationVar(&o.NodeTimeout, "node-timeout", o.NodeTimeout, "longest wait for the nodes to be ready")
	fs.DurationVar(&o.StopTimeout, "stop-timeout", o.StopTimeout, "grace between SIGTERM and SIGKILL when stopping")
	var out output
	out.registerJSON(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if len(modules) > 0 {
		o.Modules = modules
	}
	for name, ptr := range ports {
		for i, v := range *given[name] {
			for len(o.Ports) <= i {
				o.Ports = append(o.Ports, cluster.Ports{})
			}
			*ptr(&o.Ports[i]) = v
		}
	}
	o.Log = cl.stderr
	s, err := cluster.Up(ctx, o)
	if err != nil {
		return err
	}
	if s.Resumed {
		fmt.Fprintln(cl.stderr, "cluster already running: nothing started")
	}
	if out.json { // one line per node, as the state file records it
		enc := json.NewEncoder(cl.stdout)
		for _, n := range s.Nodes {
			if err := enc.Encode(n); err != nil {
				return err
			}
		}
		return nil
	}
	s.Describe(cl.stdout)
	return nil
}
