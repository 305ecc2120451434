// Package backend adapts hybrank's engine and models to the HTTP server's
// interfaces (package server) and assembles what one server process serves.
//
//   - Index serves an engine.Engine as server.Searcher,
//     server.DocumentStore and server.IndexStats; document IDs are scoped
//     to a tenant, so one tenant's batch can never touch another's.
//   - Tokenizer serves a wordpiece.Tokenizer as server.Tokenizer.
//   - Config (with Validate) names the models, the runtime settings and the
//     index; RegisterFlags binds serve's command line to it; Open loads and
//     opens them into server.Services; Run serves them until its context
//     ends. cmd/serve is flags → Config → Run.
//
// # Config file
//
// LoadConfig reads cmd/serve's --config file: one JSON object with
// server.Config's keys at the top level (addr, max_documents, rerank,
// embed, api_keys, rerank_models, client_rerank_aliases,
// client_embed_aliases, weaviate: {prefix, public}, ...) and the engine's under "engine",
// engine.Config's JSON (durations in nanoseconds), which Config.Engine
// holds and Open passes to engine.Open. Its keys:
//
//   - durability: sync ("commit" or "interval"), sync_interval,
//     segment_bytes, preallocate_bytes, snapshot_log_bytes, snapshot_age;
//   - maintenance: interval, min_docs, rebuild_drift, rebuild_deleted,
//     compact_tombstones, rebuild_step, compact_step;
//   - rerank: first_batch, min_batch, max_batch, ewma_alpha, margin,
//     margin_fraction;
//   - top_k, candidates, fusion, rrf_k, alpha, embed_batch;
//   - analysis, postings, dense: the index's shape, for a new index only
//     (an existing snapshot's replace them).
//
// Missing keys keep engine.DefaultConfig's values; unknown keys are an
// error; Config.Validate runs engine.Config.Validate. For example:
//
//	{"addr": "0.0.0.0:8080",
//	 "engine": {"durability": {"sync": "interval", "sync_interval": 50000000,
//	                           "snapshot_log_bytes": 268435456},
//	            "rerank": {"margin": 5000000}}}
//
// # Several rerankers
//
// Open builds and loads each reranker of Config.Server.Rerankers once
// (fast, balanced, accurate or any model directory) and hands the one
// object to both sides: server.Services.Scorers[name] for the rerank
// routes and engine.WithReranker(name) for /search, behind the same cache
// when CacheMB is set. The default reranker's tokenizer serves /tokenize,
// token counts and packing. Validate refuses two rerankers that would load
// the same directory (give one model both names instead).
//
// The cross-encoder and bi-encoder need no adapter: the server's
// PairScorer and Embedder speak models.Pair and models.Usage, so
// *ort.CrossEncoder and *ort.BiEncoder are backends as they are.
//
// # No cgo
//
// Like the server and the engine, this package builds with CGO_ENABLED=0
// (internal/layering checks ./server/...): Open takes the model
// constructors as parameters instead of importing models/ort, so a Go
// service with its own models can serve the engine, tenant rule included,
// without linking ONNX Runtime. cmd/serve passes ort.NewCrossEncoder and
// ort.NewBiEncoder.
//
// # Concurrency and lifetime
//
// Index, Tokenizer and Resources are safe for concurrent use. Resources own
// their models and engine: Close (idempotent) writes the engine snapshot
// when the index is on disk, then closes the engine and the models; close
// them after the server using them has stopped.
package backend
