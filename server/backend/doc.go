// Package backend adapts hybrank's engine and models to the HTTP server's
// interfaces (package server) and assembles what one server process serves.
//
//   - Index serves an engine.Engine as server.Searcher,
//     server.DocumentStore and server.IndexStats; document IDs are scoped
//     to a tenant, so one tenant's batch can never touch another's.
//   - Tokenizer serves a wordpiece.Tokenizer as server.Tokenizer.
//   - Config (with Validate) names the models, the runtime settings and the
//     index; RegisterFlags binds serve's command line to it; Open loads and
//     opens them into server.Backends; Run serves them until its context
//     ends. cmd/serve is flags → Config → Run.
//
// # Several rerankers
//
// Open builds and loads each reranker of Config.Server.Rerankers once
// (fast, balanced, accurate or any model directory) and hands the one
// object to both sides: server.Backends.Scorers[name] for the rerank
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
// Index, Tokenizer and Backend are safe for concurrent use. A Backend owns
// its models and engine: Close (idempotent) writes the engine snapshot when
// the index is on disk, then closes the engine and the models; close it
// after the server using it has stopped.
package backend
