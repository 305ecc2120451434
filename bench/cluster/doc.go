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
// query caches on, no index, one thread per model), waits until each
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
// offline (TIKTOKEN_CACHE_DIR), and the transformers modules' startup wait
// off. That wait would keep a node restarted while its sidecar is down in
// module init (up to Weaviate's 60-minute init deadline); without it the
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
package cluster
