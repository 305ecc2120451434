// Package server is hybrank's HTTP inference endpoint: cross-encoder
// reranking, embeddings, hybrid search and document ingestion, speaking the
// wire shapes that existing clients already use.
//
// # Routes
//
//	POST /rerank, /v1/rerank, /v2/rerank  Cohere/Jina {model, query, documents, top_n,
//	                                      return_documents, max_tokens_per_doc}
//	                                      -> {id, results: [{index, relevance_score, document?}], meta};
//	                                      /rerank and /v1/rerank (Cohere v1, Jina) return documents
//	                                      unless return_documents=false and add Jina's model and
//	                                      usage.total_tokens; /v2/rerank (Cohere v2, whose API has no
//	                                      return_documents) returns index and score only unless asked;
//	                                      TEI {query, texts, raw_scores, return_text, truncate}
//	                                      -> [{index, score, text?}] on the same routes; a pair
//	                                      longer than the reranker's window is 413 unless truncate.
//	POST /embed                           TEI {inputs, normalize, truncate} -> [[f32]]: unit
//	                                      vectors, or the pooled ones with normalize=false; an
//	                                      input over max_input_tokens is 413 unless truncate.
//	POST /v1/embeddings                   OpenAI {input, model, encoding_format, dimensions}: an
//	                                      input over max_input_tokens is cut to it (OpenAI's own
//	                                      API answers 400; its clients send no truncate flag);
//	                                      dimensions over the model's is 400 (param "dimensions")
//	GET  /v1/models                       OpenAI model list: every name "model" may take, with
//	                                      kind, root (the served name), default and aliases
//	POST /tokenize                        TEI {inputs, add_special_tokens} -> [[{id, text, special,
//	                                      start, stop}]]: text is the input's slice, start and stop
//	                                      byte offsets (null for special tokens); at most
//	                                      max_inputs × max_input_tokens tokens a request (413)
//	POST /analyze                         {inputs, input_type: document|query} -> {analyzer,
//	                                      terms: [[term]]}: the index's BM25 analysis (engine
//	                                      analysis settings, stemming included), for an engine
//	                                      without it (Weaviate: a "whitespace" property)
//	POST /search                          hybrid search: the JSON of engine.Request -> engine.Result
//	                                      (hits with provenance, passages, fallbacks, timings)
//	POST /documents, DELETE /documents    {documents: [engine.Document], delete: [id]} / {ids: [id]}:
//	                                      atomic batches of upserts and deletes, applied as
//	                                      the engine's batches are: documents in order, then
//	                                      delete, the last operation on a document (tenant and
//	                                      ID) winning; engine.Batch.Validate's refusals are 400
//	                                      with its message
//	GET  /healthz (/health), /readyz, /metrics (Prometheus)
//	GET  /openapi.json                    the OpenAPI 3.1 description of all of the above
//	POST /weaviate/vectors, /vectors/     Weaviate's text2vec-transformers and
//	POST /weaviate/rerank                 reranker-transformers protocols, under
//	GET  /weaviate/meta                   weaviate.prefix (see below)
//	GET  /weaviate/.well-known/{ready,live}
//
// # Weaviate
//
// The server stands in for the Python inference containers of Weaviate's
// text2vec-transformers and reranker-transformers modules: give Weaviate
// http://HOST:PORT/weaviate as TRANSFORMERS_INFERENCE_API and
// RERANKER_INFERENCE_API (one sidecar per Weaviate node scales inference
// with the nodes). The prefix (weaviate.prefix, serve --weaviate-prefix;
// "" turns the routes off) keeps them apart from TEI's /rerank, whose
// body ({query, documents}) is Cohere's and Weaviate's alike. The wire is
// Weaviate v1.35.2's (weaviate.go has it in full): /vectors embeds one
// text ({"text", "config": {"pooling_strategy", "task_type",
// "dimensions"}} -> {"text", "vector", "dim", "dims"}), task_type "query"
// with the embedder's query prompt, "passage" or none with its document
// prompt; a pooling_strategy other than the embedder's ("masked_mean" is
// mean) and more dimensions than it has are 400, fewer keep the leading
// dimensions; vectors are unit length. /rerank scores {"query",
// "documents"} with the default reranker -> {"query", "scores":
// [{"document", "score"}]} in the documents' order; a call not scored
// within weaviate.rerank_budget (default nine tenths of request_timeout,
// the queue's wait included) is answered 200 in the order sent, scored
// −1, −2, … (hybrank_weaviate_rerank_degraded_total), so that an
// overloaded sidecar costs a search its reranking, not the search. Both
// go through the same batchers, caches, limits and metrics as the other
// routes. The
// modules send no API key: with api_keys, these routes need one unless
// weaviate.public is set; readiness and liveness are public.
//
// Weaviate's API modules work too, pointed at the server by their
// baseURL: reranker-cohere calls /v1/rerank (return_documents false, no
// top_n, results placed by index), text2vec-openai /v1/embeddings, both
// with "Authorization: Bearer <module key>" (an --api-key of the server's
// passes, another is 401 in the module's shape). text2vec-openai sizes
// its batches by the rate-limit headers below.
//
// # OpenAPI
//
// openapi.json (embedded, served at GET /openapi.json without an API key)
// describes every route with its request and response schemas, the
// statuses it answers with the error shape, the tenant rules and the
// bearer key. It is kept honest by tests: the route table (routeTable, the
// one list that routes registers) and the document's paths and methods
// must be equal, and real responses of every route, in each shape and for
// each error, must validate against the schema documented for their
// status (a JSON-Schema subset validator in openapi_test.go that refuses
// keywords it does not check). Arrays are arrays: a handler answers [],
// never null, where the document says array.
//
// # Model names
//
// One server serves one embedder and any number of rerankers
// (rerank_models; without it one, named rerank_model), each with its own
// queue (models/queue), window (max_pair_tokens) and metrics (the "model" label). A
// request's "model" may be empty (the route's default: the reranker that
// rerank_model names, else the first of rerank_models; the embedder), a
// served name (a reranker's name, embed_model) or an alias (its aliases;
// rerank_aliases for the default reranker; embed_aliases); backend.Open
// adds each model's profile name (fast, balanced, accurate; embed) and its
// model directory's base name (ms-marco-MiniLM-L-6-v2, all-minilm-l6-v2).
// /search's "rerank" and "cascade.first" take the same names (the
// Searcher gets the served name). Other names are 404, listing the
// accepted ones; responses name the served model. A name means one model
// only: Config.Validate refuses duplicates and aliases of two models.
// GET /v1/models lists every name with its kind, the served name it means
// (root), whether it is the default, and each served name's aliases.
//
// The names clients send when their user names none are more aliases of
// the default models (client_rerank_aliases, client_embed_aliases; empty
// lists turn them off): rerank-v3.5 (Weaviate's reranker-cohere),
// rerank-english-v3.0, rerank-multilingual-v3.0,
// jina-reranker-v2-base-multilingual (reranker-jinaai); for the embedder
// text-embedding-3-small (text2vec-openai), text-embedding-3-large,
// text-embedding-ada-002 and jina-embeddings-v4 (text2vec-jinaai). A name a
// model is given by its own fields wins over them. text2vec-openai sends
// "dimensions": 1536 with text-embedding-3-small: the 400 says to set the
// collection's dimensions to the model's, or its model to the served
// name, for which it sends none.
//
// Relevance scores are the sigmoid of the cross-encoder logit
// (models.Sigmoid; TEI's raw_scores returns the logit). Inference and search
// responses carry TEI's x-compute-time, x-compute-tokens and x-total-time
// headers (milliseconds, tokens). The APIs' usage fields (Cohere's
// input_tokens, Jina's total_tokens, OpenAI's prompt_tokens) count the
// request's input as the Tokenizer does (each pair cut to the window), the
// same whether the caches of --cache-mb or the model answered;
// x-compute-tokens and hybrank_tokens_total count what the model reports
// it computed (0 for a request the caches answered).
//
// # Long documents
//
// Every rerank shape takes hybrank's "chunking": {stride, max_chunks_per_doc,
// aggregate ("max" | "mean_top_k"), top_k} (models.Chunking). A document
// is then cut into overlapping windows of the Tokenizer's tokens that fit
// max_pair_tokens beside the query (after max_tokens_per_doc, if given),
// the windows go through the model's queue as ordinary pairs (sharing batches
// with other requests, cached with --cache-mb), and the document's score is
// their aggregate; each result gets an extra "span": {start, end}, the best
// window's byte offsets in the document (Cohere and Elasticsearch also take
// the max over chunks but return no span). TEI's 413 for long texts does
// not apply; a request of more than max_documents × 32 windows is 413.
// /search takes the same object as engine.Request's chunking,
// and reranked hits carry provenance.rerank_span.
//
// # Wire types
//
// Search and documents speak the engine's own types (engine.Request,
// engine.Result, engine.Document), whose JSON tags are the API; durations
// are milliseconds ("budget_ms" in, fractional stage "timings" out). The
// model backends speak models.Pair and models.Usage, so models/ort's
// CrossEncoder and BiEncoder plug in as they are; package server/backend
// adapts the engine (with the tenant ownership rule) and the tokenizer.
//
// # Handlers
//
// Every API route has one shape (endpoint): decode the capped body with a
// fuzzed decoder (decode.go, one Fuzz target each), authorize (model name,
// the API key's tenant, backend present), call the backend under the
// admission limit and the request deadline, encode. Each step returns its
// error; statusOf (errors.go) is the one place errors become statuses.
//
// # Errors and limits
//
// Every error is JSON in the shape of the request's API (errors.go, api),
// so each API's clients find the text where they look: OpenAI's routes
// (/v1/embeddings, /embeddings, /v1/models) {"error": {"message", "type",
// "param", "code"}, "detail"} (detail for Jina's clients, whose
// embeddings API shares the path); Cohere's and Jina's rerank bodies
// {"message", "detail", "type"} (the two APIs share /v1/rerank and their
// bodies cannot be told apart, so both texts are there; Weaviate's
// reranker-cohere reads message); TEI's routes (/rerank, /embed,
// /tokenize) and TEI bodies on any rerank route {"error", "error_type"}
// (TEI's Validation, Overloaded, Backend, Unhealthy where TEI has a word
// for the status); the Weaviate protocols {"error"}; hybrank's own
// routes {"error": {"message", "type"}}. A rerank route answers in its
// path's shape until the body is decoded (/rerank: TEI's; /v1, /v2:
// Cohere's), then in the body's. The statuses: 400 malformed JSON,
// a body that is not UTF-8 or wrong field types, 401 missing/unknown API
// key, 403 another tenant, 404 unknown model or route, 405 a known path
// under another method (with an Allow header listing the path's methods),
// 408 a body that did not arrive within request_timeout, 413 body over
// max_body_bytes or too many documents/inputs (the message names the
// limit), 429 queue full, too many requests in flight or request bodies
// in flight over max_inflight_body_bytes (with Retry-After), 500 backend
// failure, 503 backend not configured or shutting down, near the memory
// limit (memory_high_water, with Retry-After) or, for writes, the index
// read-only after a failed write-ahead log write or fsync (a restart is
// needed, so no Retry-After), 504 the request ran past request_timeout.
// Idle keep-alive connections close after two minutes.
//
// # Rate-limit headers
//
// /v1/embeddings, /embeddings, /v1/rerank and /v2/rerank answer with
// OpenAI's x-ratelimit-{limit,remaining}-{requests,tokens} and
// x-ratelimit-reset-{requests,tokens}, which text2vec-openai needs to
// batch at all (without them it sends one text a request). They are the
// server's admission, not a quota over time (ratelimit.go): requests are
// max_concurrent_requests and the slots free; tokens are the model
// queue's items (max_queue_items; bounded by the request slots times the
// items one request may send and by max_inflight_body_bytes) times the
// measured tokens an item takes, and what of that the work in flight
// leaves free; the resets, a request's running mean time while any is in
// flight, else 0s. A client that sends at most the remaining tokens is
// admitted unless its items are shorter than the mean or others come
// first.
//
// # Batching
//
// Pairs from concurrent rerank requests for one reranker (and texts from
// concurrent embedding requests) merge into shared model calls capped by
// items and estimated tokens, after waiting at most max_wait for a batch to fill. Requests are
// cut into chunks taken round-robin, so a huge request cannot starve small
// ones; results are written back by (request, index). Token counts for batch
// caps are estimated (models.EstimateTokens, cheap); the Tokenizer, when
// given, is used for /tokenize, truncation and input-length checks. With batching disabled
// each request calls the model directly.
//
// # Tenancy
//
// With api_keys configured every route but /healthz, /readyz and /metrics
// needs "Authorization: Bearer <key>". Each key is bound to one tenant:
// /search and /documents are forced to it (naming another tenant is 403),
// deletes are scoped to it (another tenant's IDs are skipped), overwriting
// another tenant's document ID is 403, and search hits of other tenants are
// dropped even if a Searcher returned them, with the passages packed from
// them. Without keys, DELETE and POST /documents?tenant=T scope a batch the
// same way; otherwise it is unscoped.
//
// # Concurrency and lifetime
//
// A Server is safe for concurrent use. Serve shuts down gracefully when its
// context ends: it stops accepting, drains requests in flight for up to
// shutdown_timeout, then closes the batchers. The Services belong to the
// caller, which closes them after Serve returns.
package server
