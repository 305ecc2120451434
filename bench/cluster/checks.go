package cluster

import (
	"fmt"
	"math"
	"strings"

	"github.com/hybrank/hybrank/bench/report"
)

// Check compares res with the targets: the import complete, no failed
// search, the hybrid searches within MaxNDCGGap of the engine (BM25 and
// vector alone are INFO: the analysis differs), the peer's speed and
// vectors, and the fault run's reads, replicas and recovery.
func (t Targets) Check(cfg Config, res Result) []report.Check {
	var cs []report.Check
	for _, im := range res.Imports {
		if im.Phase != "load" {
			continue
		}
		cs = append(cs,
			report.AtMost("load: objects not acknowledged at "+im.Consistency, float64(im.Failed), 0, firstNonEmpty(im.FirstError, fmt.Sprintf("%d of %d acknowledged", im.Acked, im.Docs))),
			report.AtMost("load: |objects counted − documents|", math.Abs(float64(im.Counted-im.Docs)), 0, fmt.Sprintf("Aggregate count %d at %s", im.Counted, im.Consistency)),
			report.Inform("load: import docs/s (hybrank embedding through text2vec-transformers)", im.DocsPerS, fmt.Sprintf("%d documents in %.1f s, %d importers, batches of %d", im.Acked, im.Seconds, cfg.Importers, cfg.BatchSize)))
	}
	engine := map[string]float64{} // the engine's nDCG@10 by setup
	for _, r := range res.Searches {
		if r.Impl == "engine" {
			engine[r.Setup] = r.NDCG10
		}
	}
	failed, degraded, reranked := 0, 0, 0
	for _, r := range res.Searches {
		if r.Impl != "weaviate" {
			continue
		}
		failed += r.Errors
		degraded += r.Degraded
		if strings.Contains(r.Search, "reranked") {
			reranked += r.Queries
		}
		gap, ok := r.EngineGap.Value()
		if !ok || r.Clients != cfg.Clients[0] {
			continue
		}
		ov, _ := r.Overlap10.Value()
		name := fmt.Sprintf("%s: |nDCG@10 Weaviate − engine|", r.Setup)
		detail := fmt.Sprintf("Weaviate %.4f, engine %.4f, top-10 overlap %.3f", r.NDCG10, r.NDCG10-gap, ov)
		if pg, ok := r.PlainGap.Value(); ok {
			detail += fmt.Sprintf("; the engine with Weaviate's analysis (no stemming, 1-character tokens) %.4f, |Δ| %.4f", r.NDCG10-pg, math.Abs(pg))
		}
		if r.Analysis == AnalysisHybrank && r.Setup != setupDense {
			detail += fmt.Sprintf("; Weaviate's BM25F on hybrank's terms (analyzer %s)", res.Versions.Analyzer)
		}
		own, plain := strings.CutSuffix(r.Setup, plainSuffix)
		switch {
		case plain:
			if e, ok := engine[own]; ok {
				detail += fmt.Sprintf("; the engine with its own analysis %.4f", e)
			}
			cs = append(cs, report.Inform(name, math.Abs(gap), detail+"; informative: Weaviate's own analysis (word tokens: no stemming, 1-character tokens kept), beside the engine with the same"))
		case r.Setup == setupBM25 || r.Setup == setupDense:
			cs = append(cs, report.Inform(name, math.Abs(gap), detail+"; informative: "+gapWhy(r)))
		default:
			cs = append(cs, report.AtMost(name, math.Abs(gap), t.MaxNDCGGap, detail))
		}
	}
	if cfg.analyzed() && cfg.Engine.Enabled {
		want := cfg.Engine.Engine.Analysis.Version()
		differ := 0.0
		if res.Versions.Analyzer != want {
			differ = 1
		}
		cs = append(cs, report.AtMost("analysis: the sidecar's terms (/analyze) made otherwise than the engine's", differ, 0,
			fmt.Sprintf("sidecar %s, engine %s", res.Versions.Analyzer, want)))
	}
	cs = append(cs, report.AtMost("failed searches (no fault, every setup and client count)", float64(failed), 0, ""),
		report.Inform("reranked searches answered unreranked (a sidecar's rerank budget ran out; no fault)", float64(degraded), fmt.Sprintf("of %d reranked searches", reranked)))
	if res.RerankErr == "" && cfg.Engine.Enabled {
		cs = append(cs, report.AtLeast("sidecar vs engine reranker, Spearman over one query's documents", res.RerankRho, 0.999,
			fmt.Sprintf("largest |Δ score| %.3g; the sidecar answers the sigmoid of the model's score", res.RerankGap)))
	} else if cfg.Engine.Enabled {
		cs = append(cs, report.Inform("sidecar vs engine reranker", 0, "not compared: "+res.RerankErr))
	}
	if p := res.Peer; p != nil {
		cs = append(cs, t.peerChecks(*p)...)
	}
	if f := res.Faults; f != nil {
		cs = append(cs, t.faultChecks(cfg, *f)...)
	}
	return cs
}

// gapWhy says why a single retriever's gap is not a target.
func gapWhy(r SearchRow) string {
	switch {
	case r.Setup == setupDense:
		return "Weaviate's HNSW and the engine's dense index are both approximate"
	case r.Analysis == AnalysisHybrank:
		return "on the same terms, Weaviate's BM25F scores each shard with its own statistics"
	}
	return "Weaviate's BM25F has no stemming, keeps 1-character tokens and scores each shard with its own statistics"
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// peerChecks: hybrank's requests/s over the peer's, per measurement, and
// the vectors' cosine. The goal is checked where the sidecar is the
// bottleneck: the protocol driven directly, at the same thread budget. The
// rows through Weaviate are informative: on one machine shared with three
// Weaviate nodes, an import is bound by Weaviate's own work (its
// transformers module embeds a batch's objects one after the other) as
// much as by the sidecar's, so their CPU per request says more than their
// rate.
func (t Targets) peerChecks(p PeerResult) []report.Check {
	var cs []report.Check
	by := map[string]map[string]PeerRow{}
	for _, r := range p.Rows {
		if by[r.What] == nil {
			by[r.What] = map[string]PeerRow{}
		}
		by[r.What][r.Sidecars] = r
	}
	cpu := func(r PeerRow) string {
		if v, ok := r.CPUPerReq.Value(); ok {
			return fmt.Sprintf("%.1f", v)
		}
		return "–"
	}
	for _, what := range []string{whatImport, whatSearch, whatEmbedDirect, whatQueryDirect, whatRerankDirect} {
		q, okq := by[what][string(SidecarPeer)]
		if !okq || q.ReqPerS == 0 {
			continue
		}
		for _, side := range []SidecarKind{SidecarHybrank, SidecarHybrankInt8} {
			h, ok := by[what][string(side)]
			if !ok {
				continue
			}
			name := fmt.Sprintf("peer: %s: %s req/s ÷ peer req/s", what, side)
			detail := fmt.Sprintf("%s %.1f, peer %.1f req/s, %d clients; sidecar CPU ms per request %s vs %s", side, h.ReqPerS, q.ReqPerS, h.Clients, cpu(h), cpu(q))
			switch {
			case side == SidecarHybrankInt8:
				cs = append(cs, report.Inform(name, h.ReqPerS/q.ReqPerS, detail+"; node 0's sidecar alone, int8 models: vectors "+int8Cosines(p)))
			case strings.HasSuffix(what, "direct"):
				cs = append(cs, report.AtLeast(name, h.ReqPerS/q.ReqPerS, t.MinPeerSpeedup, detail+"; node 0's sidecar alone, the same thread budget"))
			default:
				cs = append(cs, report.Inform(name, h.ReqPerS/q.ReqPerS, detail+"; through Weaviate, which shares the machine"))
			}
		}
	}
	if p.Compared > 0 {
		cs = append(cs, report.AtMost("peer: 1 − least cosine of stored (hybrank) and peer vectors", 1-p.MinCosine, t.MaxCosineGap,
			fmt.Sprintf("%d of %d documents within; least at document %s", p.Within, p.Compared, p.WorstDoc)))
	}
	if least, ok := p.Int8MinCosine.Value(); ok {
		cs = append(cs, report.Inform("peer: 1 − least cosine of int8 and stored (float32) vectors", 1-least, int8Cosines(p)))
	}
	cs = append(cs, report.Inform("peer: rerank scores hybrank vs peer, Spearman", p.RerankRho, fmt.Sprintf("one query, largest |Δ| %.3g", p.RerankGap)))
	return cs
}

// int8Cosines describes the int8 sidecar's vectors against the float32
// ones.
func int8Cosines(p PeerResult) string {
	least, ok := p.Int8MinCosine.Value()
	if !ok {
		return "not compared"
	}
	mean, _ := p.Int8MeanCosine.Value()
	return fmt.Sprintf("cosine to float32 least %.5f, mean %.5f over %d documents", least, mean, p.Compared)
}

// faultChecks: reads at the live nodes while a node is down, replicas
// after catch-up, what a dead sidecar costs, recovery.
func (t Targets) faultChecks(cfg Config, f FaultResult) []report.Check {
	var cs []report.Check
	rec := t.MaxRecovery.Seconds()
	// A restart that never served within the wait (4 × MaxRecovery)
	// counts as the whole wait.
	never := func(s float64) float64 {
		if s < 0 {
			return 4 * rec
		}
		return s
	}
	for _, r := range f.Rows {
		writes := fmt.Sprintf("%d of %d acknowledged, %d of the failures at node %d; %s", r.Acked, r.Writes, r.FaultyWriteFails, r.Faulty, firstNonEmpty(r.WriteError, "no failure"))
		switch {
		case strings.HasPrefix(r.Phase, "node"):
			cs = append(cs,
				report.AtMost(fmt.Sprintf("faults: reads failed by the cluster at %s on the live nodes while %s", cfg.Consistency, r.Phase), float64(r.ReadFails-r.InferenceFails), float64(t.MaxFailedReads),
					fmt.Sprintf("%d reads (%d reranked); %s", r.Reads, r.Reranks, firstNonEmpty(r.FirstError, "no failure"))),
				inferenceCheck(r, "on the live nodes"),
				report.Inform(fmt.Sprintf("faults: requests at node %d that failed while %s", r.Faulty, r.Phase), float64(r.FaultyFails),
					fmt.Sprintf("%d sent to it (in flight at the kill, or the recovery probe's); %s", r.FaultyReads, firstNonEmpty(r.FaultyError, "none"))),
				report.Inform(fmt.Sprintf("faults: objects not acknowledged at %s while %s", cfg.Consistency, r.Phase), float64(r.WriteFails), writes))
		case strings.HasPrefix(r.Phase, "sidecar"):
			cs = append(cs,
				report.AtMost(fmt.Sprintf("faults: reads failed by the cluster at the other nodes while %s", r.Phase), float64(r.ReadFails-r.InferenceFails), 0,
					fmt.Sprintf("%d reads (%d reranked); %s", r.Reads, r.Reranks, firstNonEmpty(r.FirstError, "no failure"))),
				inferenceCheck(r, "at the other nodes"),
				report.Inform(fmt.Sprintf("faults: failed reads at node %d while %s", r.Faulty, r.Phase), float64(r.FaultyFails),
					fmt.Sprintf("%d of %d failed (reranked %d of %d); first failure: %s", r.FaultyFails, r.FaultyReads, r.FaultyRerankFails, r.FaultyReranks, firstNonEmpty(r.FaultyError, "no failure"))),
				report.Inform(fmt.Sprintf("faults: objects not acknowledged while %s", r.Phase), float64(r.WriteFails), writes))
		case r.Phase == "after":
			cs = append(cs, report.AtMost("faults: failed reads after both restarts", float64(r.ReadFails+r.FaultyFails), 0,
				fmt.Sprintf("%d reads; %s", r.Reads+r.FaultyReads, firstNonEmpty(r.FirstError, r.InferenceError, r.FaultyError, "no failure"))))
		}
	}
	cs = append(cs,
		report.AtMost("faults: acknowledged objects × replicas missing after catch-up", float64(f.Missing), float64(t.MaxMissing),
			fmt.Sprintf("%d objects acknowledged at %s, 3 replicas each read on their node; missing at the end of the load %v", f.Acked, cfg.Consistency, f.MissingAtEnd)),
		report.Inform("faults: catch-up time after the load stopped (s)", f.CatchUpS, catchUpDetail(f)),
		report.AtMost(fmt.Sprintf("faults: node %d restart → serves a reranked search (s)", cfg.Faults.Node), never(f.NodeRecoveryS), rec, fmt.Sprintf("ready after %.2f s", f.NodeReadyS)),
		report.AtMost(fmt.Sprintf("faults: sidecar %d restart → its node serves a reranked search (s)", cfg.Faults.Sidecar), never(f.SidecarRecoveryS), rec, ""))
	return cs
}

// inferenceCheck: the reads of r's phase at the nodes whose sidecars
// run that failed by inference (a sidecar's timeout under the load), a
// goal of its own: no fault of one node may cost another node's searches.
func inferenceCheck(r FaultRow, where string) report.Check {
	return report.AtMost(fmt.Sprintf("faults: reads failed by inference %s while %s", where, r.Phase), float64(r.InferenceFails), 0,
		fmt.Sprintf("%d reads (%d reranked, %d of them answered unreranked by a sidecar's rerank budget); %s", r.Reads, r.Reranks, r.RerankDegraded, firstNonEmpty(r.InferenceError, "no failure")))
}

// catchUpDetail says what the catch-up time measured.
func catchUpDetail(f FaultResult) string {
	if f.Missing == 0 {
		return "until every acknowledged object was found on every replica"
	}
	return fmt.Sprintf("gave up with %d object × replica pairs missing", f.Missing)
}
