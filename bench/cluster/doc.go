// Package cluster runs hybrank as the inference tier of a real Weaviate
// cluster on one host: it starts, stops and restarts the nodes and their
// sidecars (this file's first part and nodes.go), for `make cluster`,
// `bench cluster-up` / `cluster-down` and the fault tests of `bench
// cluster`.
//
// # Lifecycle
//
// Up starts, per node, one inference sidecar (hybrank serve with the real
// all-MiniLM-L6-v2 embedder and the balanced cross-encoder, score and
// query caches on, no index, one thread per model call and one call per
// core at once), waits until each
// answers its ready path, then starts the Weaviate nodes (the version the
// Makefile pins) and waits for every node's /v1/.well-known/ready (not
// /v1/nodes: it shows all nodes healthy seconds before each can serve).
// Each node's TRANSFORMERS_INFERENCE_API and RERANKER_INFERENCE_API point
// at its own sidecar + /weaviate, so inference scales with the nodes; a
// collection using text2vec-openai or reranker-cohere names a sidecar's
// URL as its baseURL instead; the nodes hold a key for those modules
// (Options.ModuleKey), which refuse to call a baseURL without one.
//
// The layout is Weaviate's tools/dev/run_dev_server.sh three-node one
// (CLUSTER_IN_LOCALHOST, names weaviate-0…, RAFT_JOIN name:port,
// RAFT_BOOTSTRAP_EXPECT = nodes) plus what that layout lacks (nodeEnv): bind
// and advertise 127.0.0.1, every node in every node's CLUSTER_JOIN, one
// profiling port per node, async replication not vetoed, tiktoken's files
// offline (TIKTOKEN_CACHE_DIR), BM25 by classic WAND
// (USE_INVERTED_SEARCHABLE=false: v1.35.2's BlockMax WAND, forced on every
// new collection, misses true top-k hits until its segments are compacted,
// weaviate/weaviate#11780 and #12022), and the transformers modules'
// startup wait off. That wait would keep a node restarted while its
// sidecar is down in module init (up to Weaviate's 60-minute init
// deadline); without it the
// node comes up and only its vectorizing and reranking fail until the
// sidecar returns. Up does the waiting on the sidecars instead, and fails
// at once, saying so, when a sidecar answers 404 on the ready path (a serve
// built without Weaviate's protocols).
//
// Async replication is per collection: create it with
// replicationConfig.asyncEnabled true; the nodes only keep the server from
// disabling it (ASYNC_REPLICATION_DISABLED=false). Options.Env passes
// further variables (ASYNC_REPLICATION_FREQUENCY, …) to every node.
//
// # Ports
//
// Every port is picked free (probed on all interfaces) unless given, and a
// stale state's ports are reused where free. On one host Weaviate reaches
// a peer's Raft RPC port at its Raft port + 1, so those two are picked as
// a pair (and the data port as gossip + 1, memberlist's fallback). REST,
// gossip, Raft and Raft RPC listen on 127.0.0.1; Weaviate binds gRPC, the
// internal data port, metrics and profiling on every interface with no
// setting to change it (State.Describe marks them).
//
// # State
//
// The state file (Options.Dir/cluster.json, StateFile) records every
// process: its command, environment (the variables set over the caller's
// environment), log, PID and start time. A second Up with every recorded
// process running starts nothing (State.Resumed); a stale one (some process
// gone) stops the rest and starts afresh on the same data. Down stops
// exactly the recorded processes: a PID whose start time (/proc/PID/stat)
// differs from the one recorded is another process now and is never
// signalled. Each
// process leads its own session (Setsid), so it outlives the command that
// started it and a signal reaches what it forked. Logs are appended to
// Dir/logs/ across restarts; data stays in Dir/node<i> unless Down wipes
// it. Up and Down lock Dir (internal/dirlock) against each other.
//
// # Faults
//
// State's KillNode, StartNode, KillSidecar, StartSidecar and
// ReplaceSidecar (another program, such as the Python peer, on the same
// port) change one process and save the state file; WaitNodeReady,
// WaitSidecarReady and WaitReady wait for them. Processes started by this
// process are reaped when they exit, so a killed node never lingers as a
// zombie.
//
// # Concurrency and caveats
//
// State's methods are safe for concurrent use; its address fields never
// change after Up. Linux only: process identity comes from /proc.
//
// # The benchmark: bench cluster
//
// Run(ctx, Config, Cluster) drives a running cluster (OpenState reads the
// state file; a missing one is an error that says to run `make cluster`)
// over Weaviate's REST and GraphQL API with plain net/http (weaviate.go;
// no Weaviate client module):
//
//   - load (load.go): a BEIR dataset (cut by Docs/Queries: judged
//     documents first) into a collection of Shards × Replicas with async
//     replication, text2vec-transformers on one property holding the
//     document's "title text" (what the engine indexes, embeds and
//     reranks) and reranker-transformers; with Analysis "hybrank" also
//     a property "terms" (whitespace tokens, not vectorized) holding the
//     engine's BM25 terms of that text from the sidecar's /analyze,
//     stemming included; by POST /v1/batch/objects at
//     Consistency from Importers clients over the nodes; every object's
//     acknowledgement is checked and the count read back;
//   - searches (query.go): every judged query as GraphQL Get, BM25 alone,
//     vector alone, hybrid with the fusion bench hybrid chose (Fused:
//     weighted-α is relativeScoreFusion at α) and that hybrid reranked by
//     the module; BM25 on "terms" with the query's terms (its vector the
//     query's own, asked of the node's sidecar within the search's time
//     and given as hybrid's vector, not nearText, which v1.35.2 would
//     rerank too; reranked on the text), and BM25 and
//     the fusion once more on the text with Weaviate's own word tokens;
//     at each of Clients concurrent clients, query i on node
//     i mod n, no retry: nDCG@10, Recall@100 and MRR@10 by bench/eval,
//     QPS, p50/p99 at the client;
//   - the engine (engine.go): bench hybrid's engines (hybrid.Open) on the
//     same documents and models, the same setups, the fused hits reranked
//     as Weaviate reranks them, and BM25 and the fusion without stemming
//     (Weaviate's analysis as far as the engine has it), beside the rows
//     on Weaviate's own analysis; each Weaviate row gets its
//     nDCG gap and top-10 overlap to the engine's; one query's rerank
//     through a sidecar is compared with the engine's reranker;
//   - the peer (peer.go): hybrank's sidecars measured (an import through
//     Weaviate, reranked searches, each protocol endpoint driven directly
//     with documents, query-length texts and rerank requests, and node 0's
//     sidecar again with int8 models), the Python peer swapped in on every
//     sidecar's port with the same thread budget (torch's threads = the
//     sidecar's threads × calls at once) and measured alike, its vectors
//     compared with the stored ones, hybrank swapped back (also on
//     failure). Where the cluster can read /proc (the state's processes),
//     each row has the sidecars' CPU time per request; the goal is checked
//     on the direct rows, where the sidecar alone is the bottleneck;
//   - faults (faults.go): Queriers clients search and Importers import
//     fresh objects while node Faults.Node is SIGKILLed and restarted,
//     then node Faults.Sidecar's sidecar; failures are counted per phase
//     at the faulty node and at the others (a failed read at the others
//     counts as the cluster's or, when Weaviate passes on its inference
//     module's error, as inference's), recovery is timed from each
//     restart to a served reranked search, and every acknowledged object
//     is then read on every replica (node_name) until all are found.
//
// Report renders bench/results/cluster.md; checks.go holds the targets.
// The tests run the driver against an in-process fake cluster
// (fake_test.go); e2e_test.go runs on the real one where `make cluster`
// started it and skips otherwise.
//
// Caveats: everything runs on one host, so the cluster, its sidecars,
// the peer and the engine share its cores and every speed figure is of
// that host; the reranker's weights are the profile's (generated unless
// real ones are installed), so reranked quality compares the two
// pipelines, not published figures. Run's phases are sequential; Result
// and the rows are plain values.
package cluster
