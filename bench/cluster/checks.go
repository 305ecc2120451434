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
	failed := 0
	for _, r := range res.Searches {
		if r.Impl != "weaviate" {
			continue
		}
		failed += r.Errors
		gap, ok := r.EngineGap.Value()
		if !ok || r.Clients != cfg.Clients[0] {
			continue
		}
		ov, _ := r.Overlap10.Value()
		name := fmt.Sprintf("%s: |nDCG@10 Weaviate − engine|", r.Setup)
		detail := fmt.Sprintf("Weaviate %.4f, engine %.4f, top-10 overlap %.3f", r.NDCG10, r.NDCG10-gap, ov)
		if r.Setup == setupBM25 || r.Setup == setupDense {
			cs = append(cs, report.Inform(name, math.Abs(gap), detail+"; informative: "+gapWhy(r.Setup)))
			continue
		}
		cs = append(cs, report.AtMost(name, math.Abs(gap), t.MaxNDCGGap, detail))
	}
	cs = append(cs, report.AtMost("failed searches (no fault, every setup and client count)", float64(failed), 0, ""))
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
func gapWhy(setup string) string {
	if setup == setupBM25 {
		return "Weaviate's BM25F has no stemming, keeps 1-character tokens and scores each shard with its own statistics"
	}
	return "Weaviate's HNSW and the engine's dense index are both approximate"
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
// the vectors' cosine.
func (t Targets) peerChecks(p PeerResult) []report.Check {
	var cs []report.Check
	by := map[string]map[string]PeerRow{}
	for _, r := range p.Rows {
		if by[r.What] == nil {
			by[r.What] = map[string]PeerRow{}
		}
		by[r.What][r.Sidecars] = r
	}
	for _, what := range []string{"embed via import", "rerank via search", "embed direct", "rerank direct"} {
		h, okh := by[what][sideHybrank]
		q, okq := by[what][sidePeer]
		if !okh || !okq || q.ReqPerS == 0 {
			continue
		}
		name := "peer: " + what + ": hybrank req/s ÷ peer req/s"
		detail := fmt.Sprintf("hybrank %.1f, peer %.1f req/s, %d clients", h.ReqPerS, q.ReqPerS, h.Clients)
		if strings.HasSuffix(what, "direct") {
			cs = append(cs, report.Inform(name, h.ReqPerS/q.ReqPerS, detail+"; one sidecar alone"))
			continue
		}
		cs = append(cs, report.AtLeast(name, h.ReqPerS/q.ReqPerS, t.MinPeerSpeedup, detail))
	}
	if p.Compared > 0 {
		cs = append(cs, report.AtMost("peer: 1 − least cosine of stored (hybrank) and peer vectors", 1-p.MinCosine, t.MaxCosineGap,
			fmt.Sprintf("%d of %d documents within; least at document %s", p.Within, p.Compared, p.WorstDoc)))
	}
	cs = append(cs, report.Inform("peer: rerank scores hybrank vs peer, Spearman", p.RerankRho, fmt.Sprintf("one query, largest |Δ| %.3g", p.RerankGap)))
	return cs
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
				report.AtMost(fmt.Sprintf("faults: failed reads at %s on the live nodes while %s", cfg.Consistency, r.Phase), float64(r.ReadFails), float64(t.MaxFailedReads),
					fmt.Sprintf("%d reads (%d reranked); %s", r.Reads, r.Reranks, firstNonEmpty(r.FirstError, "no failure"))),
				report.Inform(fmt.Sprintf("faults: requests at node %d that failed while %s", r.Faulty, r.Phase), float64(r.FaultyFails),
					fmt.Sprintf("%d sent to it (in flight at the kill, or the recovery probe's); %s", r.FaultyReads, firstNonEmpty(r.FaultyError, "none"))),
				report.Inform(fmt.Sprintf("faults: objects not acknowledged at %s while %s", cfg.Consistency, r.Phase), float64(r.WriteFails), writes))
		case strings.HasPrefix(r.Phase, "sidecar"):
			cs = append(cs,
				report.AtMost(fmt.Sprintf("faults: failed reads at the other nodes while %s", r.Phase), float64(r.ReadFails), 0,
					fmt.Sprintf("%d reads (%d reranked); %s", r.Reads, r.Reranks, firstNonEmpty(r.FirstError, "no failure"))),
				report.Inform(fmt.Sprintf("faults: failed reads at node %d while %s", r.Faulty, r.Phase), float64(r.FaultyFails),
					fmt.Sprintf("%d of %d failed (reranked %d of %d); Weaviate answers: %s", r.FaultyFails, r.FaultyReads, r.FaultyRerankFails, r.FaultyReranks, firstNonEmpty(r.FaultyError, "no failure"))),
				report.Inform(fmt.Sprintf("faults: objects not acknowledged while %s", r.Phase), float64(r.WriteFails), writes))
		case r.Phase == "after":
			cs = append(cs, report.AtMost("faults: failed reads after both restarts", float64(r.ReadFails+r.FaultyFails), 0,
				fmt.Sprintf("%d reads; %s", r.Reads+r.FaultyReads, firstNonEmpty(r.FirstError, r.FaultyError, "no failure"))))
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

// catchUpDetail says what the catch-up time measured.
func catchUpDetail(f FaultResult) string {
	if f.Missing == 0 {
		return "until every acknowledged object was found on every replica"
	}
	return fmt.Sprintf("gave up with %d object × replica pairs missing", f.Missing)
}
