package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/queue"
)

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string (models.Duration, which the model queues' config shares).
type Duration = models.Duration

// APIKey binds one bearer token to one tenant. A request authenticated with
// the key can only read and write that tenant's documents.
type APIKey struct {
	// Key is the secret the client sends as "Authorization: Bearer <Key>".
	Key string `json:"key"`
	// Tenant is the tenant every search and document request made with this
	// key is forced to.
	Tenant string `json:"tenant"`
}

// RerankerConfig is one served cross-encoder (Config.RerankModels): the
// names a request may give for it and, for backend.Open, where to load it
// from. It is plain data.
type RerankerConfig struct {
	// Name is the served name: responses report it, and the Searcher's
	// engine knows the model by it (the server rewrites /search's
	// "rerank" and "cascade.first" from any of the model's names to it).
	Name string `json:"name"`
	// Aliases are more names a request may give for this model.
	Aliases []string `json:"aliases,omitempty"`
	// Profile is the model profile (fast, balanced, accurate) whose
	// defaults backend.Open loads the model with; empty means Name when
	// Name is a cross-encoder profile, else balanced. The server itself
	// does not read it.
	Profile string `json:"profile,omitempty"`
	// Dir is the model directory (Hugging Face ONNX layout); empty means
	// $HYBRANK_MODELS/<Profile>. The server itself does not read it.
	Dir string `json:"dir,omitempty"`
	// MaxPairTokens is this model's input window (see
	// Config.MaxPairTokens, which applies when it is 0). backend.Open
	// gives it to the model as its window (models.Config.MaxLength, where
	// the model cuts pairs) and sets it to the window the model resolves
	// (at most its positions).
	MaxPairTokens int `json:"max_pair_tokens,omitempty"`
}

// Names returns every name a request may give for r: Name, then Aliases,
// without repeats.
func (r RerankerConfig) Names() []string { return modelNames(r.Name, r.Aliases) }

// WeaviateConfig places the inference protocols of Weaviate's
// text2vec-transformers and reranker-transformers modules, so that the
// server stands in for their Python containers (see weaviate.go).
type WeaviateConfig struct {
	// Prefix is the path the protocols are served under: Weaviate is given
	// http://host:port<Prefix> as TRANSFORMERS_INFERENCE_API and
	// RERANKER_INFERENCE_API, and calls <Prefix>/vectors, <Prefix>/rerank,
	// <Prefix>/meta and <Prefix>/.well-known/{ready,live}. A prefix is
	// needed because /rerank already speaks TEI. It starts with "/" and
	// does not end with one; "" turns the protocols off.
	Prefix string `json:"prefix"`
	// Public serves <Prefix>/vectors, /rerank and /meta without an API key
	// when api_keys are configured: Weaviate's transformers modules send
	// no Authorization header, so with keys and without this they are
	// answered 401. Only inference is opened (no tenant's documents); put
	// the server where only the cluster reaches it. Readiness and
	// liveness are public either way, as /healthz is.
	Public bool `json:"public,omitempty"`
	// RerankBudget bounds how long a <Prefix>/rerank call waits for its
	// scores, the queue's wait included. Past it the call is answered
	// anyway, degraded: the documents in the order sent, scored −1, −2, …
	// (below every model score, which are sigmoids in (0, 1)), so that
	// Weaviate keeps its own order for those hits instead of failing the
	// search; hybrank_weaviate_rerank_degraded_total counts these answers.
	// 0 is nine tenths of request_timeout: a call that would have been a
	// 504 is answered degraded instead. Set, it must be below
	// request_timeout.
	RerankBudget Duration `json:"rerank_budget,omitempty"`
}

// rerankBudget is the budget of a <Prefix>/rerank call under a request
// deadline of timeout (see RerankBudget).
func (w WeaviateConfig) rerankBudget(timeout Duration) time.Duration {
	if w.RerankBudget > 0 {
		return time.Duration(w.RerankBudget)
	}
	return time.Duration(timeout) / 10 * 9
}

// Config is the whole server configuration. It is loadable from a JSON file
// (LoadConfig) and is plain data: safe to copy, not to mutate while a Server
// built from it runs.
type Config struct {
	// Addr is the listen address; the default binds loopback only.
	Addr string `json:"addr"`
	// RerankModel names the default reranker, the one a request without
	// "model" gets. With RerankModels empty it is the only reranker's
	// name; otherwise the default is the entry this names (by name or
	// alias), else the first entry, which then answers to this name too.
	RerankModel string `json:"rerank_model"`
	// EmbedModel is the name clients pass as "model" for embeddings.
	EmbedModel string `json:"embed_model"`
	// RerankAliases are more names a request may give as "model" for the
	// default reranker.
	RerankAliases []string `json:"rerank_aliases,omitempty"`
	// RerankModels are the served rerankers, each chosen by a request's
	// "model" (and by /search's "rerank"); empty means one, named
	// RerankModel. backend.Open loads each once, for the rerank routes and
	// /search alike, and adds each one's profile and model directory's
	// base name to its aliases. Rerankers gives them normalised.
	RerankModels []RerankerConfig `json:"rerank_models,omitempty"`
	// EmbedAliases are more names for the embedder; backend.Open adds
	// "embed" and the model directory's base name.
	EmbedAliases []string `json:"embed_aliases,omitempty"`
	// ClientRerankAliases are the rerank model names that clients send
	// when their user names none, accepted as more names of the default
	// reranker (after RerankAliases), so that a client left at its
	// defaults is served rather than answered 404. A name that another
	// model is given by its own fields (a reranker's name or aliases,
	// embed_model or embed_aliases) is not added: the explicit name wins.
	// The defaults are Weaviate v1.35.2's reranker-cohere default
	// (rerank-v3.5) and Cohere's other current rerankers, and
	// reranker-jinaai's default; an empty list turns them off.
	ClientRerankAliases []string `json:"client_rerank_aliases"`
	// ClientEmbedAliases are the same for the embedder: text2vec-openai's
	// default (text-embedding-3-small, which Weaviate sends with
	// "dimensions": 1536, more than most served models have: the answer
	// is a 400 saying which dimensions to set), OpenAI's other embedding
	// models, and text2vec-jinaai's default. Empty turns them off.
	ClientEmbedAliases []string `json:"client_embed_aliases"`
	// Weaviate places Weaviate's own inference protocols
	// (text2vec-transformers, reranker-transformers).
	Weaviate WeaviateConfig `json:"weaviate"`
	// Provider names the execution provider in use (cpu, cuda), exported as
	// the hybrank_provider gauge: what the models report (backend.Open
	// sets it), not a setting, so a config file may not hold it (serve's
	// --provider chooses).
	Provider string `json:"-"`
	// MaxBodyBytes caps a request body; larger is refused with 413.
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// MaxDocuments caps documents per rerank request (Cohere allows 10,000).
	MaxDocuments int `json:"max_documents"`
	// MaxInputs caps texts per embedding request.
	MaxInputs int `json:"max_inputs"`
	// MaxIndexDocuments caps documents (upserts plus deletes) per
	// /documents request.
	MaxIndexDocuments int `json:"max_index_documents"`
	// MaxInputTokens is the longest input, in tokens without [CLS] and
	// [SEP], an embedding request may send without truncate=true (413
	// otherwise), and where truncation cuts. backend.Open lowers it to what
	// the embedder's window holds.
	MaxInputTokens int `json:"max_input_tokens"`
	// MaxPairTokens is the cross-encoders' input window, in tokens with
	// [CLS] and the two [SEP]: the longest (query, text) pair a TEI rerank
	// request may send without truncate=true (413 otherwise). A reranker's
	// own RerankerConfig.MaxPairTokens takes precedence. backend.Open
	// makes a value other than the default the models' window (they cut
	// pairs there); with the default each model keeps its own.
	MaxPairTokens int `json:"max_pair_tokens"`
	// MaxConcurrentRequests caps inference and search requests in flight;
	// more is refused with 429.
	MaxConcurrentRequests int `json:"max_concurrent_requests"`
	// MaxInflightBodyBytes caps the request bodies held at once, over
	// every route with a body: a request reserves its Content-Length (or
	// MaxBodyBytes when it sends none) before its body is read, and keeps
	// it until it is answered, since what it decodes to lives as long. A
	// request that would pass the cap is refused with 429 and
	// Retry-After; one that finds nothing reserved is always admitted (up
	// to MaxBodyBytes). Bodies are read before MaxConcurrentRequests
	// admits a request, so without this cap N slow senders could hold N ×
	// MaxBodyBytes and their decoded forms.
	MaxInflightBodyBytes int64 `json:"max_inflight_body_bytes"`
	// MemoryHighWater is the fraction of the Go memory limit (GOMEMLIMIT
	// or debug.SetMemoryLimit) above which requests with a body are
	// refused with 503 and Retry-After until the process is back under
	// it: a process near its limit sheds work rather than grow past it
	// (the limit is soft, and a container's OOM killer does not wait for
	// the collector). Memory is the runtime's (mapped minus released, what
	// the limit governs). 0 turns the check off; without a memory limit
	// it never trips.
	MemoryHighWater float64 `json:"memory_high_water"`
	// RequestTimeout is the deadline of one request; running past it is
	// answered with 504.
	RequestTimeout Duration `json:"request_timeout"`
	// ShutdownTimeout bounds how long graceful shutdown waits for in-flight
	// requests to drain.
	ShutdownTimeout Duration `json:"shutdown_timeout"`
	// Rerank tunes the rerankers' queues (models/queue, one per reranker:
	// the rerank routes and the engine's /search submit to it). The server
	// reads it only for its rate-limit headers; backend.Open builds the
	// queues with it.
	Rerank queue.Config `json:"rerank"`
	// Embed tunes the embedder's queue, as Rerank.
	Embed queue.Config `json:"embed"`
	// APIKeys, when non-empty, turns authentication on for every route but
	// /healthz, /readyz and /metrics.
	APIKeys []APIKey `json:"api_keys"`
}

// DefaultConfig returns the configuration cmd/serve starts from.
func DefaultConfig() Config {
	return Config{
		Addr:                  "127.0.0.1:8080",
		RerankModel:           "hybrank-rerank",
		EmbedModel:            "hybrank-embed",
		Provider:              "cpu",
		MaxBodyBytes:          8 << 20,
		MaxDocuments:          10000,
		MaxInputs:             2048,
		MaxIndexDocuments:     10000,
		MaxInputTokens:        512,
		MaxPairTokens:         512,
		MaxConcurrentRequests: 512,
		MaxInflightBodyBytes:  256 << 20,
		MemoryHighWater:       0.9,
		RequestTimeout:        Duration(30 * time.Second),
		ShutdownTimeout:       Duration(30 * time.Second),
		Rerank:                queue.DefaultConfig(),
		Embed:                 queue.DefaultConfig(),
		ClientRerankAliases: []string{
			"rerank-v3.5", "rerank-english-v3.0", "rerank-multilingual-v3.0",
			"jina-reranker-v2-base-multilingual",
		},
		ClientEmbedAliases: []string{
			"text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002",
			"jina-embeddings-v4",
		},
		Weaviate: WeaviateConfig{Prefix: "/weaviate"},
	}
}

// LoadConfig reads a JSON config file over DefaultConfig (fields missing
// from the file keep their defaults). Unknown fields are an error, so a typo
// does not silently fall back to a default. It does not call Validate.
func LoadConfig(path string) (Config, error) {
	cfg := DefaultConfig()
	return cfg, LoadJSON(path, &cfg)
}

// LoadJSON decodes the JSON config file at path into v, over what v holds
// (fields missing from the file keep their values), as LoadConfig does:
// unknown fields and data after the one object are errors. Callers whose
// file holds more than a Config (cmd/serve's, through backend.LoadConfig)
// decode it with this.
func LoadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("load config %s: %w", path, err)
	}
	// One object: a second one (a pasted fragment, say with api_keys)
	// would otherwise be dropped without a word.
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return fmt.Errorf("load config %s: data after the config object", path)
	}
	return nil
}

// Validate reports every invalid field at once, wrapped in ErrConfig.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("addr %q: %w", c.Addr, err))
	}
	if c.RerankModel == "" || c.EmbedModel == "" {
		errs = append(errs, errors.New("rerank_model and embed_model must be named"))
	}
	errs = append(errs, c.validateNames())
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, errors.New("max_body_bytes must be > 0"))
	}
	if c.MaxDocuments <= 0 || c.MaxInputs <= 0 || c.MaxIndexDocuments <= 0 {
		errs = append(errs, errors.New("max_documents, max_inputs and max_index_documents must be > 0"))
	}
	if c.MaxInputTokens <= 0 || c.MaxPairTokens <= 0 {
		errs = append(errs, errors.New("max_input_tokens and max_pair_tokens must be > 0"))
	}
	if c.MaxConcurrentRequests <= 0 {
		errs = append(errs, errors.New("max_concurrent_requests must be > 0"))
	}
	if c.MaxInflightBodyBytes < c.MaxBodyBytes {
		errs = append(errs, errors.New("max_inflight_body_bytes must be ≥ max_body_bytes"))
	}
	if !(c.MemoryHighWater >= 0 && c.MemoryHighWater < 1) {
		errs = append(errs, errors.New("memory_high_water must be in [0, 1)"))
	}
	if c.RequestTimeout <= 0 || c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("request_timeout and shutdown_timeout must be > 0"))
	}
	errs = append(errs, c.Rerank.ValidateAs("rerank"), c.Embed.ValidateAs("embed"), c.Weaviate.validate(c.RequestTimeout))
	seen := map[string]bool{}
	for i, k := range c.APIKeys {
		if k.Key == "" || k.Tenant == "" {
			errs = append(errs, fmt.Errorf("api_keys[%d]: key and tenant must both be set", i))
		}
		if seen[k.Key] {
			errs = append(errs, fmt.Errorf("api_keys[%d]: duplicate key", i))
		}
		seen[k.Key] = true
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// Rerankers returns the served rerankers, the default first, then the
// others in RerankModels' order. With RerankModels empty it is one,
// named RerankModel with RerankAliases. Otherwise the default is the
// entry that RerankModel names (by name or alias), else the first; the
// default answers to RerankModel and RerankAliases too. The slice and the
// alias slices are copies.
func (c Config) Rerankers() []RerankerConfig {
	if len(c.RerankModels) == 0 {
		aliases := append(slices.Clone(c.RerankAliases), c.clientAliases(c.ClientRerankAliases, 0)...)
		d := RerankerConfig{Name: c.RerankModel, Aliases: aliases}
		d.Aliases = d.Names()[1:]
		return []RerankerConfig{d}
	}
	def := 0
	for i, r := range c.RerankModels {
		if slices.Contains(r.Names(), c.RerankModel) {
			def = i
			break
		}
	}
	out := make([]RerankerConfig, 0, len(c.RerankModels))
	d := c.RerankModels[def]
	d.Aliases = append(append(slices.Clone(d.Aliases), c.RerankModel), c.RerankAliases...)
	d.Aliases = append(d.Aliases, c.clientAliases(c.ClientRerankAliases, def)...)
	d.Aliases = d.Names()[1:]
	out = append(out, d)
	for i, r := range c.RerankModels {
		if i != def {
			r.Aliases = slices.Clone(r.Aliases)
			out = append(out, r)
		}
	}
	return out
}

// RerankNames returns every name a request may give for a reranker: each
// reranker's names, in Rerankers' order.
func (c Config) RerankNames() []string {
	var out []string
	for _, r := range c.Rerankers() {
		out = append(out, r.Names()...)
	}
	return out
}

// EmbedNames returns every name a request may give for the embedder:
// EmbedModel, then EmbedAliases, then ClientEmbedAliases that no
// reranker is given, without repeats.
func (c Config) EmbedNames() []string {
	return modelNames(c.EmbedModel, append(slices.Clone(c.EmbedAliases), c.clientAliases(c.ClientEmbedAliases, -1)...))
}

// clientAliases returns the names of list (ClientRerankAliases or
// ClientEmbedAliases) that no other model is given by its own fields:
// for the default reranker (owner, the index of its RerankModels entry,
// 0 without entries), the names of the other entries and of the embedder;
// for the embedder (owner -1), every reranker's own names. An explicit
// name always wins over a client default.
func (c Config) clientAliases(list []string, owner int) []string {
	var taken []string
	if owner >= 0 {
		taken = append(taken, c.EmbedModel)
		taken = append(taken, c.EmbedAliases...)
		for i, r := range c.RerankModels {
			if i != owner {
				taken = append(taken, r.Names()...)
			}
		}
	} else {
		taken = append(taken, c.RerankModel)
		taken = append(taken, c.RerankAliases...)
		for _, r := range c.RerankModels {
			taken = append(taken, r.Names()...)
		}
	}
	var out []string
	for _, n := range list {
		if !slices.Contains(taken, n) {
			out = append(out, n)
		}
	}
	return out
}

// modelNames returns served, then the aliases other than it, without
// repeats.
func modelNames(served string, aliases []string) []string {
	out := []string{served}
	for _, a := range aliases {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// validateNames rejects empty names, a name that would mean two models
// (two rerankers, or a reranker and the embedder) and negative windows.
func (c Config) validateNames() error {
	var errs []error
	empty := func(field string, names []string) {
		for i, a := range names {
			if strings.TrimSpace(a) == "" {
				errs = append(errs, fmt.Errorf("%s[%d] is empty", field, i))
			}
		}
	}
	empty("rerank_aliases", c.RerankAliases)
	empty("embed_aliases", c.EmbedAliases)
	empty("client_rerank_aliases", c.ClientRerankAliases)
	empty("client_embed_aliases", c.ClientEmbedAliases)
	for i, r := range c.RerankModels {
		if strings.TrimSpace(r.Name) == "" {
			errs = append(errs, fmt.Errorf("rerank_models[%d].name is empty", i))
		}
		empty(fmt.Sprintf("rerank_models[%d].aliases", i), r.Aliases)
		if r.MaxPairTokens < 0 {
			errs = append(errs, fmt.Errorf("rerank_models[%d].max_pair_tokens must be >= 0", i))
		}
	}
	owner := map[string]string{} // name -> the reranker it means
	for _, r := range c.Rerankers() {
		if _, dup := owner[r.Name]; dup && owner[r.Name] == r.Name {
			errs = append(errs, fmt.Errorf("two rerank_models are named %q", r.Name))
			continue
		}
		for _, n := range r.Names() {
			if o, taken := owner[n]; taken && n != "" {
				errs = append(errs, fmt.Errorf("model name %q names both reranker %q and reranker %q; a name may mean one model only", n, o, r.Name))
				continue
			}
			owner[n] = r.Name
		}
	}
	embed := c.EmbedNames()
	for _, n := range c.RerankNames() {
		if n != "" && slices.Contains(embed, n) {
			errs = append(errs, fmt.Errorf("model name %q names both a reranker and the embedder; rename one (rerank_model, rerank_models, embed_model and their aliases must differ)", n))
		}
	}
	return errors.Join(errs...)
}
