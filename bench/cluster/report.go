package cluster

import (
	"cmp"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/hybrank/hybrank/bench/report"
)

// Report renders res for bench/results/cluster.md: the checks, the
// search table (Weaviate beside the engine), and as notes the imports, the
// BM25 differences, the peer's table, the fault phases and timeline, and
// the versions; the rows are the search rows, the other results one JSON
// block.
func Report(cfg Config, res Result, command string) report.Report {
	rep := report.Report{
		Title:   "Scale-out: hybrank as the inference tier of a Weaviate cluster",
		Command: command,
		Checks:  res.Checks,
		Config:  cfg,
		Columns: report.Columns(SearchRow{}),
		Rows:    report.Rows(res.Searches),
	}
	v := res.Versions
	nodes := make([]string, 0, len(v.Nodes))
	for n, s := range v.Nodes {
		nodes = append(nodes, n+" "+s)
	}
	sort.Strings(nodes)
	sort.Strings(v.Modules)
	rep.Notes = append(rep.Notes,
		fmt.Sprintf("Cluster: Weaviate %s, %d nodes on 127.0.0.1 (%s), modules used %s; each node's text2vec-transformers and reranker-transformers call its own sidecar (hybrank serve: %s). Collection %s: %d shards × %d replicas, async replication %v, distance %s, consistency %s for every import and read.",
			v.Weaviate, len(res.Nodes), strings.Join(nodes, "; "), strings.Join(v.Modules, ", "), clip(v.SidecarMeta, 400),
			cfg.collection(), v.Collection.Shards, v.Collection.Replicas, v.Collection.Async, v.Collection.Distance, cfg.Consistency),
		fmt.Sprintf("Data: %s, %d documents, %d judged queries (qrels test). Each document is one object whose searched, vectorized and reranked property `text` is \"title text\" (what hybrank's engine indexes, embeds and reranks), the title and BEIR id stored beside it; ids are name-based UUIDs of the BEIR ids.", res.Dataset, res.Docs, res.Queries),
		fmt.Sprintf("Searches: GraphQL Get at %s, query i on node i mod %d, no retry (a failed search scores 0 and counts in errors). The fusion is bench hybrid's %s, which it chose on cisi with the real all-MiniLM-L6-v2 (hybrid_real_all-minilm-l6-v2.md): Weaviate's %s at α %g (%s). Weaviate reranks the %d hits of a reranked search (its reranker sends them 32 a request); the engine row %s does the same with the engine's reranker on the engine's fused hits. bm25 rows are in trec_eval order (ties by id), as bench hybrid evaluates them. QPS is queries over wall time; latencies are per search at the client.%s%s",
			cfg.Consistency, len(res.Nodes), v.Fusion.Setup.Name, v.Fusion.Type, v.Fusion.Alpha, fusionNote(v.Fusion), cfg.RerankLimit, rerankSetup(v.Fusion, cfg.RerankLimit), clientNote(cfg), coldNote(cfg)),
		fmt.Sprintf("Models: the sidecars embed with the real all-MiniLM-L6-v2 (384-d, mean pooling, unit length) and rerank with the %s profile, whose weights are generated (random, the real model's shape: bench models) unless real_weights says otherwise — the reranked rows' quality then compares the two pipelines with each other, not with published figures. The engine runs on the sidecars' own model directories (%s).", cfg.Profile, cmp.Or(v.EngineModels, "engine not run")),
		bm25Note(cfg, res),
	)
	if res.Faults != nil {
		rep.Notes = append(rep.Notes, faultNotes(cfg, res.Versions.Fusion, *res.Faults)...)
	}
	if res.Peer != nil {
		rep.Notes = append(rep.Notes, peerNotes(*res.Peer)...)
	}
	rep.Notes = append(rep.Notes, "Imports:\n\n"+table(report.Columns(ImportRow{}), report.Rows(allImports(res))))
	phases := make([]string, len(res.Phases))
	for i, p := range res.Phases {
		phases[i] = fmt.Sprintf("t=%.0fs %s", p.T, p.What)
	}
	rep.Notes = append(rep.Notes, "Run phases: "+strings.Join(phases, "; ")+".")
	other := struct {
		Nodes    []Endpoint   `json:"nodes"`
		Versions Versions     `json:"versions"`
		Imports  []ImportRow  `json:"imports"`
		Peer     *PeerResult  `json:"peer,omitempty"`
		Faults   *FaultResult `json:"faults,omitempty"`
	}{res.Nodes, res.Versions, allImports(res), res.Peer, res.Faults}
	if j, err := json.Marshal(other); err == nil {
		rep.Notes = append(rep.Notes, "Other results (JSON, one line):\n\n```json\n"+string(j)+"\n```")
	}
	return rep
}

// allImports are the load's and the peer phase's imports.
func allImports(res Result) []ImportRow {
	out := append([]ImportRow(nil), res.Imports...)
	if res.Peer != nil {
		out = append(out, res.Peer.Imports...)
	}
	return out
}

// table renders rows as a markdown table.
func table(cols []string, rows []any) string {
	var b strings.Builder
	if err := report.WriteTable(&b, cols, rows); err != nil {
		return err.Error()
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// fusionNote says how Weaviate's fusion relates to the engine's.
func fusionNote(f fusion) string {
	if f.Type == "rankedFusion" {
		return "Weaviate's ranked fusion adds α/(60 + rank − 1) per list, the engine's RRF 1/(60 + rank): orders can differ where lists tie"
	}
	return "(1 − α)·minmax(bm25) + α·minmax(vector) over each list's 100 candidates, the engine's weighted fusion exactly; the engine's relative fusion is the same sum at α 0.5"
}

// bm25Note says where Weaviate's BM25F differs from the engine's BM25,
// from both sides' settings.
func bm25Note(cfg Config, res Result) string {
	c := res.Versions.Collection
	a := cfg.Engine.Engine.Analysis
	p := cfg.Engine.Engine.Postings
	return fmt.Sprintf("BM25: the rows of analysis %q run Weaviate's BM25F on `terms`, which holds the engine's own terms of each document (the sidecar's /analyze: stemmer %s, tokens of ≥ %d characters, the %q stopwords dropped) as whitespace tokens, searched with the query's terms; the rows of analysis %q run it on `text` (tokenization %q: lower-cased alphanumeric runs, 1-character tokens kept, no stemming; stopwords preset %q, the same 33 English words as the engine's list) beside the engine's rows %q and %q, without stemming and with 1-character tokens (column \"Δ engine, no stemming\"). k1 %g, b %g in Weaviate; k1 %g, b %g, %s idf in the engine. With the same terms what is left is that Weaviate scores each shard with its own document count, frequencies and mean length and merges the shards' top hits, where the engine scores with the whole corpus's statistics, and float32 scores. The nodes run classic WAND (USE_INVERTED_SEARCHABLE=false): v1.35.2's default BlockMax WAND misses true top hits in a freshly written collection until its segments are compacted (weaviate/weaviate#11780, #12022).",
		AnalysisHybrank, a.Stemmer, a.MinTokenLen, a.Stopwords, AnalysisWeaviate, c.Tokenization, c.Stopwords.Preset, setupBM25Plain, plainSetup(res.Versions.Fusion.Setup.Name), c.BM25.K1, c.BM25.B, p.K1, p.B, p.Variant)
}

// faultNotes are the fault phase's description, phase table and timeline.
func faultNotes(cfg Config, fu fusion, f FaultResult) []string {
	fc := cfg.Faults
	tl := make([]string, len(f.Timeline))
	for i, e := range f.Timeline {
		tl[i] = fmt.Sprintf("- t=%.2fs %s", e.T, e.What)
	}
	return []string{
		fmt.Sprintf("Faults: %d clients search (hybrid %s α %g, %d hits, every other one reranked) and %d import fresh objects (batches of %d) into a collection of its own, at %s, while node %d is SIGKILLed and restarted %v later, then node %d's sidecar likewise. The clients' rotation (a load balancer) leaves out the killed node until it answers ready; the node whose sidecar is dead stays in it, so its answers are counted apart (\"at faulty\"). No request is retried. After the load, every acknowledged object is read on each replica (GET with node_name, consistency ONE) until all are found.",
			fc.Queriers, fu.Type, fu.Alpha, fc.SearchLimit, fc.Importers, fc.BatchSize, cfg.Consistency, fc.Node, fc.Down, fc.Sidecar),
		"Fault phases:\n\n" + table(report.Columns(FaultRow{}), report.Rows(f.Rows)),
		"Fault timeline:\n\n" + strings.Join(tl, "\n"),
	}
}

// peerNotes are the peer phase's description and table.
func peerNotes(p PeerResult) []string {
	metas := []string{}
	for side, m := range p.Meta {
		metas = append(metas, side+": "+clip(m, 300))
	}
	sort.Strings(metas)
	return []string{
		fmt.Sprintf("Peer: the sidecars were swapped for the Python peer (sentence-transformers behind FastAPI, as Weaviate's own inference containers; same ports, same models) in %.1f s and back in %.1f s. Thread budget: %s. Requests per second: \"via\" rows count what Weaviate sent the three sidecars (one vectors request per object; a reranked search of n hits is 2·ceil(n/32) rerank requests: Weaviate reranks the hits twice, which counted confirms for hybrank, warm-up searches included; the detail says how many of the pairs hybrank's cache or a concurrent call of the same pairs answered), \"direct\" rows drive node 0's sidecar alone with the bodies Weaviate sends (documents; query-length texts, all different, with task_type query; 32 documents to rerank), every body different so that no cache answers; \"hybrank int8\" is node 0's sidecar restarted with int8 copies of its models (serve --quantize int8); counted is what hybrank's /metrics saw; cpu ms/req is the sidecars' CPU time (user + system, every thread, from /proc) over the requests, warm-up included. Vectors: the stored vectors (made by hybrank on import) against the peer's of the same texts: least cosine %.7f (document %s), %d of %d documents within 1e-5; the int8 sidecar's against the stored ones: %s. Rerank scores of one query's 32 documents: Spearman %.4f, largest |Δ| %.3g. Meta: %s.",
			p.SwapS, p.BackS, budgetNote(p), p.MinCosine, p.WorstDoc, p.Within, p.Compared, int8Cosines(p), p.RerankRho, p.RerankGap, strings.Join(metas, "; ")),
		"Peer comparison:\n\n" + table(report.Columns(PeerRow{}), report.Rows(p.Rows)),
	}
}

// budgetNote says what threads each implementation had.
func budgetNote(p PeerResult) string {
	if p.Threads <= 0 {
		return "not known (the cluster's sidecar command was not read)"
	}
	pool := max(1, p.Pool)
	return fmt.Sprintf("each hybrank sidecar runs %d intra-op thread(s) per model call and %d call(s) at once; the peer runs torch with %d intra-op threads, and its FastAPI thread pool runs several calls at once (its reranker one at a time), as Weaviate's containers do",
		p.Threads, pool, p.Threads*pool)
}

// clientNote says what the client does for a search of analysis
// "hybrank".
func clientNote(cfg Config) string {
	if !cfg.analyzed() {
		return ""
	}
	return fmt.Sprintf(" On analysis %q the client searches `terms` with the query's terms (asked of a sidecar's /analyze once per query text, before the searches) and gives a hybrid search the query's own vector, asked of the queried node's sidecar (task_type query) within the search's time, as hybrid's `vector`: v1.35.2 would rerank a nearText subsearch's 100 candidates too.", AnalysisHybrank)
}

// coldNote says whether each set of searches started with cold caches.
func coldNote(cfg Config) string {
	if !cfg.ColdCaches {
		return " The sidecars' caches stay warm from set to set (the same queries repeat: later sets find their query vectors and rerank scores cached)."
	}
	return " Each set of searches that uses the sidecars starts with them restarted (empty query-embedding and rerank-score caches); within a set the caches work as in production (Weaviate scores each reranked hit list twice)."
}
