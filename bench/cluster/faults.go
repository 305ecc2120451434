package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybrank/hybrank/bench/measure"
)

// Event is one line of the fault timeline.
type Event struct {
	// T is seconds since the load started.
	T    float64       `json:"t_s"`
	What string        `json:"event"`
	at   time.Duration // T unrounded
}

// FaultRow is the traffic of one phase of the fault run: a line of
// cluster.md. Requests are attributed to the phase in which they started
// (a failed one at the faulty node to the phase in which it ended: it was
// in flight at the kill);
// "faulty" is the node killed (node phases) or whose sidecar is dead
// (sidecar phases), "others" the rest.
type FaultRow struct {
	Phase  string  `json:"phase" table:""`
	FromS  float64 `json:"from_s" table:"from s"`
	ToS    float64 `json:"to_s" table:"to s"`
	Faulty int     `json:"faulty_node"` // -1: none
	// Reads and ReadFails are the searches at the other nodes (hybrid,
	// without and with reranking) and how many failed.
	Reads       int `json:"reads" table:""`
	ReadFails   int `json:"read_fails" table:""`
	Reranks     int `json:"reranked_reads" table:"reranked"`
	RerankFails int `json:"reranked_fails" table:"reranked fails"`
	// InferenceFails are the ReadFails whose error is Weaviate passing on
	// its inference module's (inferenceFailure): a sidecar that timed
	// out, refused or was gone, not the read of the replicas.
	InferenceFails int `json:"inference_fails" table:"of them inference"`
	// RerankDegraded are the Reranks that succeeded unreranked: a
	// sidecar's rerank budget ran out and it answered Weaviate's order
	// (unreranked, below).
	RerankDegraded int `json:"reranked_degraded" table:"reranked degraded"`
	// FaultyReads and FaultyFails are the searches that went to the
	// faulty node (of them reranked: FaultyReranks, FaultyRerankFails).
	FaultyReads       int `json:"faulty_reads" table:"at faulty"`
	FaultyFails       int `json:"faulty_fails" table:"fails at faulty"`
	FaultyReranks     int `json:"faulty_reranked"`
	FaultyRerankFails int `json:"faulty_reranked_fails"`
	// Writes, Acked and WriteFails count imported objects (all nodes);
	// FaultyWriteFails those of WriteFails sent to the faulty node.
	Writes           int `json:"writes" table:""`
	Acked            int `json:"acked" table:""`
	WriteFails       int `json:"write_fails" table:"write fails"`
	FaultyWriteFails int `json:"faulty_write_fails" table:"write fails at faulty"`
	// FirstError is a failure at the other nodes other than inference's,
	// InferenceError one of inference's; FaultyError what the faulty node
	// (or the client, without an answer) said.
	FirstError     string `json:"first_error,omitempty"`
	InferenceError string `json:"inference_error,omitempty"`
	FaultyError    string `json:"faulty_error,omitempty"`
	WriteError     string `json:"write_error,omitempty"`
}

// FaultResult is the fault run.
type FaultResult struct {
	Timeline []Event    `json:"timeline"`
	Rows     []FaultRow `json:"rows"`
	// NodeRecoveryS and SidecarRecoveryS are from the restart until the
	// node (its sidecar) served a reranked search (-1: never within the
	// wait); NodeReadyS until the node answered ready.
	NodeReadyS       float64 `json:"node_ready_s"`
	NodeRecoveryS    float64 `json:"node_recovery_s"`
	SidecarRecoveryS float64 `json:"sidecar_recovery_s"`
	// Acked objects were acknowledged at Consistency; Missing of them
	// (object × replica) were absent from a replica after CatchUpS
	// seconds of waiting from the end of the load (MissingAtEnd at its
	// first check, per node).
	Acked        int            `json:"acked"`
	MissingAtEnd map[string]int `json:"missing_at_end"`
	Missing      int            `json:"missing"`
	CatchUpS     float64        `json:"catch_up_s"`
	// NodeCounts is each node's object count of the collection per shard
	// after catch-up (/v1/nodes?output=verbose).
	NodeCounts map[string]map[string]int `json:"node_counts,omitempty"`
}

// request kinds under load.
const (
	kindRead = iota
	kindRerank
	kindWrite
)

// sample is one finished request of the fault run.
type sample struct {
	at    time.Duration // when it started, since the load started
	end   time.Duration // when it ended
	node  int
	kind  int
	ok    bool
	err   string
	n     int      // objects sent (writes)
	acked []string // acknowledged ids (writes)
	// degraded: a reranked search answered unreranked (see unreranked).
	degraded bool
}

// rotation is the nodes the clients send to, round robin: a load
// balancer that leaves out a node the driver killed until it is ready.
type rotation struct {
	mu   sync.Mutex // guards up and next
	up   []bool
	next int
}

func newRotation(n int) *rotation {
	r := &rotation{up: make([]bool, n)}
	for i := range r.up {
		r.up[i] = true
	}
	return r
}

// pick is the next node in rotation.
func (r *rotation) pick() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for range r.up {
		i := r.next % len(r.up)
		r.next++
		if r.up[i] {
			return i
		}
	}
	return 0
}

func (r *rotation) set(i int, up bool) {
	r.mu.Lock()
	r.up[i] = up
	r.mu.Unlock()
}

// faultRun is the state of one fault run.
type faultRun struct {
	cfg   Config
	w     *weaviate
	cl    Cluster
	nodes []Endpoint
	c     *corpus
	f     fusion
	class string
	rot   *rotation
	start time.Time
	logf  func(string, ...any)

	mu      sync.Mutex // guards samples and events
	samples []sample
	events  []Event

	// nodeDown and sidecarDown are set while the schedule has the node
	// or the sidecar killed and not yet restarted (restore restarts them).
	nodeDown, sidecarDown bool
	// sidecarRestart is when the sidecar was started again (0: not yet).
	sidecarRestart time.Duration
}

// firstServed is the time from since to the end of the first reranked
// search that started at node at or after since and succeeded.
func (r *faultRun) firstServed(node int, since time.Duration) (time.Duration, bool) {
	best, ok := time.Duration(0), false
	for _, s := range r.samples {
		if s.node == node && s.kind == kindRerank && s.ok && s.at >= since && (!ok || s.end < best) {
			best, ok = s.end, true
		}
	}
	return best - since, ok
}

// restore restarts what a failed or cancelled schedule left killed, so
// the cluster is whole again.
func (r *faultRun) restore() error {
	ctx := context.Background()
	var errs []error
	if r.nodeDown {
		errs = append(errs, r.cl.StartNode(ctx, r.cfg.Faults.Node))
		r.event("node %d restarted after the schedule failed", r.cfg.Faults.Node)
	}
	if r.sidecarDown {
		errs = append(errs, r.cl.StartSidecar(ctx, r.cfg.Faults.Sidecar, SidecarHybrank))
		r.event("sidecar %d restarted after the schedule failed", r.cfg.Faults.Sidecar)
	}
	return errors.Join(errs...)
}

func (r *faultRun) now() time.Duration { return time.Since(r.start) }

// event adds a timeline line now.
func (r *faultRun) event(format string, args ...any) { r.eventAt(r.now(), format, args...) }

// eventAt adds a timeline line at at (the timeline stays in time order).
func (r *faultRun) eventAt(at time.Duration, format string, args ...any) {
	e := Event{T: measure.Round(at.Seconds(), 2), What: fmt.Sprintf(format, args...), at: at}
	r.mu.Lock()
	i := len(r.events)
	for i > 0 && r.events[i-1].at > at {
		i--
	}
	r.events = slices.Insert(r.events, i, e)
	r.mu.Unlock()
	r.logf("faults: t=%.2fs %s", e.T, e.What)
}

func (r *faultRun) record(s sample) {
	r.mu.Lock()
	r.samples = append(r.samples, s)
	r.mu.Unlock()
}

// search is a search of the run's fusion with SearchLimit hits.
func (r *faultRun) search(q string, rerank bool) Search {
	return Search{Class: r.cfg.collection(), Query: q, Alpha: r.f.Alpha, Fusion: r.f.Type, Limit: r.cfg.Faults.SearchLimit,
		Rerank: rerank, Consistency: r.cfg.readConsistency(), Analyzed: r.cfg.analyzed(), Terms: r.c.terms(q)}
}

// runFaults runs the fault phase: Queriers clients search the collection
// and Importers import fresh objects into Collection+"Faults" while the
// schedule kills and restarts node Faults.Node, then the sidecar of node
// Faults.Sidecar; then it waits for every acknowledged object to be on
// every replica.
func runFaults(ctx context.Context, cfg Config, w *weaviate, cl Cluster, c *corpus, f fusion, logf func(string, ...any)) (FaultResult, error) {
	fc := cfg.Faults
	nodes := cl.Nodes()
	if fc.Node >= len(nodes) || fc.Sidecar >= len(nodes) {
		return FaultResult{}, fmt.Errorf("cluster: faults: node %d, sidecar %d: the cluster has %d nodes", fc.Node, fc.Sidecar, len(nodes))
	}
	r := &faultRun{cfg: cfg, w: w, cl: cl, nodes: nodes, c: c, f: f, class: cfg.collection() + "Faults", rot: newRotation(len(nodes)), logf: logf}
	coll := Collection{Name: r.class, Shards: cfg.Shards, Replicas: cfg.Replicas, AsyncReplication: cfg.AsyncReplication, Analyzed: cfg.analyzed()}
	if err := w.createCollection(ctx, nodes[0].HTTP, coll); err != nil {
		return FaultResult{}, fmt.Errorf("cluster: faults: %w", err)
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	r.start = time.Now()
	r.event("load starts: %d clients searching (hybrid, alternately reranked, %d hits, %s), %d importing batches of %d at %s",
		fc.Queriers, fc.SearchLimit, cfg.Consistency, fc.Importers, fc.BatchSize, cfg.Consistency)
	var seq atomic.Int64
	for range fc.Queriers {
		wg.Add(1)
		go func() { defer wg.Done(); r.query(loadCtx, &seq) }()
	}
	var wseq atomic.Int64
	for range fc.Importers {
		wg.Add(1)
		go func() { defer wg.Done(); r.importLoop(loadCtx, &wseq) }()
	}
	res, schedErr := r.schedule(ctx)
	r.event("load stops")
	stopLoad()
	wg.Wait()
	loadEnd := r.now()
	if schedErr != nil {
		return res, errors.Join(schedErr, r.restore())
	}
	res.Rows = r.phases(loadEnd)
	// The clients keep searching the node whose sidecar restarts: the
	// first of their reranked searches served there may come before the
	// probe's.
	if d, ok := r.firstServed(fc.Sidecar, r.sidecarRestart); ok && r.sidecarRestart > 0 && (res.SidecarRecoveryS < 0 || d.Seconds() < res.SidecarRecoveryS) {
		res.SidecarRecoveryS = measure.Round(d.Seconds(), 2)
		r.eventAt(r.sidecarRestart+d, "a client's reranked search started after the restart is served by node %d (%.2fs after the sidecar's restart)", fc.Sidecar, d.Seconds())
	}
	for _, s := range r.samples {
		res.Acked += len(s.acked)
	}
	if err := r.catchUp(ctx, &res); err != nil {
		return res, err
	}
	res.Timeline = r.events
	if err := w.dropCollection(ctx, nodes[0].HTTP, r.class); err != nil {
		return res, err
	}
	return res, nil
}

// query is one search client: alternately plain and reranked hybrid
// searches on the rotation's nodes until ctx ends. No retry: every failed
// request counts.
func (r *faultRun) query(ctx context.Context, seq *atomic.Int64) {
	qs := r.c.ds.Queries
	for ctx.Err() == nil {
		i := int(seq.Add(1) - 1)
		node := r.rot.pick()
		rerank := i%2 == 1
		at := r.now()
		hits, err := r.w.search(ctx, r.nodes[node], r.search(qs[i%len(qs)].Text, rerank))
		if ctx.Err() != nil {
			return // cut short by the end of the load: not a failure
		}
		s := sample{at: at, end: r.now(), node: node, kind: kindRead, ok: err == nil}
		if rerank {
			s.kind, s.degraded = kindRerank, err == nil && unreranked(hits)
		}
		if err != nil {
			s.err = clip(err.Error(), 300)
		}
		r.record(s)
	}
}

// importLoop is one import client: batches of fresh objects (the corpus's
// texts under new ids) on the rotation's nodes until ctx ends.
func (r *faultRun) importLoop(ctx context.Context, seq *atomic.Int64) {
	size := r.cfg.Faults.BatchSize
	for ctx.Err() == nil {
		b := int(seq.Add(1) - 1)
		objs := make([]Object, size)
		for k := range objs {
			n := b*size + k
			d := r.c.objects[n%len(r.c.objects)]
			objs[k] = Object{ID: uuid5(fmt.Sprintf("%s/faults/%d", r.c.ds.Name, n)), DocID: d.DocID, Title: d.Title, Text: d.Text, Terms: d.Terms}
		}
		node := r.rot.pick()
		at := r.now()
		out, err := r.w.importBatch(ctx, r.nodes[node].HTTP, r.class, r.cfg.Consistency, objs)
		if ctx.Err() != nil && err != nil {
			return
		}
		s := sample{at: at, end: r.now(), node: node, kind: kindWrite, n: size, acked: out.Acked, ok: len(out.Failed) == 0}
		for _, m := range out.Failed {
			s.err = clip(m, 300)
			break
		}
		r.record(s)
	}
}

// schedule kills and restarts node Faults.Node, then the sidecar of
// node Faults.Sidecar, with Steady of load before, between and after.
func (r *faultRun) schedule(ctx context.Context) (FaultResult, error) {
	fc := r.cfg.Faults
	res := FaultResult{NodeRecoveryS: -1, SidecarRecoveryS: -1, NodeReadyS: -1}
	sleep := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := sleep(fc.Steady); err != nil {
		return res, err
	}
	k := fc.Node
	r.rot.set(k, false)
	r.event("phase node %d down: node %d leaves the rotation and is SIGKILLed", k, k)
	r.nodeDown = true
	if err := r.cl.KillNode(k); err != nil {
		return res, fmt.Errorf("cluster: faults: kill node %d: %w", k, err)
	}
	if err := sleep(fc.Down); err != nil {
		return res, err
	}
	r.event("phase node %d restarting: node %d restarts", k, k)
	t0 := time.Now()
	if err := r.cl.StartNode(ctx, k); err != nil {
		return res, fmt.Errorf("cluster: faults: restart node %d: %w", k, err)
	}
	r.nodeDown = false
	wait := 4 * r.cfg.Targets.MaxRecovery
	if d, err := poll(ctx, wait, 250*time.Millisecond, func() bool { return r.w.ready(ctx, r.nodes[k].HTTP, 2*time.Second) }); err == nil {
		res.NodeReadyS = measure.Round(time.Since(t0).Seconds(), 2)
		r.event("node %d answers ready (%.2fs after the restart)", k, d.Seconds())
		if _, err := r.serving(ctx, k, wait-time.Since(t0)); err == nil {
			res.NodeRecoveryS = measure.Round(time.Since(t0).Seconds(), 2)
			r.event("node %d serves a reranked search (%.2fs after the restart)", k, res.NodeRecoveryS)
		} else {
			r.event("node %d served no reranked search within %v of the restart: %v", k, wait, err)
		}
	} else {
		r.event("node %d not ready within %v of the restart", k, wait)
	}
	r.rot.set(k, true)
	r.event("phase between: node %d back in the rotation", k)
	if err := sleep(fc.Steady); err != nil {
		return res, err
	}
	j := fc.Sidecar
	r.event("phase sidecar %d down: node %d's sidecar is SIGKILLed (node %d stays in the rotation)", j, j, j)
	r.sidecarDown = true
	if err := r.cl.KillSidecar(j); err != nil {
		return res, fmt.Errorf("cluster: faults: kill sidecar %d: %w", j, err)
	}
	if err := sleep(fc.Down); err != nil {
		return res, err
	}
	r.event("phase sidecar %d restarting: sidecar %d restarts (hybrank serve)", j, j)
	t1 := time.Now()
	r.sidecarRestart = r.now()
	if err := r.cl.StartSidecar(ctx, j, SidecarHybrank); err != nil {
		return res, fmt.Errorf("cluster: faults: restart sidecar %d: %w", j, err)
	}
	r.sidecarDown = false
	if _, err := r.serving(ctx, j, wait); err == nil {
		res.SidecarRecoveryS = measure.Round(time.Since(t1).Seconds(), 2)
		r.event("phase after: node %d serves a reranked search again (%.2fs after the sidecar's restart)", j, res.SidecarRecoveryS)
	} else {
		r.event("phase after: node %d served no reranked search within %v of the sidecar's restart: %v", j, wait, err)
	}
	return res, sleep(fc.Steady)
}

// serving waits until node i answers a reranked search, probing every
// 250 ms, up to limit.
func (r *faultRun) serving(ctx context.Context, i int, limit time.Duration) (time.Duration, error) {
	var last error
	d, err := poll(ctx, max(limit, time.Second), 250*time.Millisecond, func() bool {
		_, last = r.w.search(ctx, r.nodes[i], r.search(r.c.ds.Queries[0].Text, true))
		return last == nil
	})
	if err != nil && last != nil {
		err = fmt.Errorf("%w (last: %s)", err, clip(last.Error(), 200))
	}
	return d, err
}

// phases splits the samples at the timeline's "phase" events.
func (r *faultRun) phases(end time.Duration) []FaultRow {
	type cut struct {
		at     time.Duration
		name   string
		faulty int
	}
	cuts := []cut{{0, "steady", -1}}
	fc := r.cfg.Faults
	for _, e := range r.events {
		// "phase NAME: what happened" starts a phase.
		name, _, ok := strings.Cut(strings.TrimPrefix(e.What, "phase "), ":")
		if !ok || !strings.HasPrefix(e.What, "phase ") {
			continue
		}
		faulty := -1
		switch {
		case strings.HasPrefix(name, "node "):
			faulty = fc.Node
		case strings.HasPrefix(name, "sidecar "):
			faulty = fc.Sidecar
		}
		cuts = append(cuts, cut{e.at, name, faulty})
	}
	rows := make([]FaultRow, len(cuts))
	for i, c := range cuts {
		to := end
		if i+1 < len(cuts) {
			to = cuts[i+1].at
		}
		rows[i] = FaultRow{Phase: c.name, FromS: measure.Round(c.at.Seconds(), 2), ToS: measure.Round(to.Seconds(), 2), Faulty: c.faulty}
	}
	phase := func(d time.Duration) int {
		i := len(cuts) - 1
		for i > 0 && d < cuts[i].at {
			i--
		}
		return i
	}
	for _, s := range r.samples {
		i := phase(s.at)
		if j := phase(s.end); !s.ok && j != i && cuts[j].faulty == s.node {
			i = j
		}
		rows[i].add(s)
	}
	return rows
}

// add counts s in row.
func (row *FaultRow) add(s sample) {
	if s.kind == kindWrite {
		row.Writes += s.n
		row.Acked += len(s.acked)
		row.WriteFails += s.n - len(s.acked)
		if s.node == row.Faulty {
			row.FaultyWriteFails += s.n - len(s.acked)
		}
		if !s.ok && row.WriteError == "" {
			row.WriteError = fmt.Sprintf("node %d: %s", s.node, s.err)
		}
		return
	}
	rerank := s.kind == kindRerank
	if s.node == row.Faulty {
		row.FaultyReads++
		if rerank {
			row.FaultyReranks++
		}
		if !s.ok {
			row.FaultyFails++
			if rerank {
				row.FaultyRerankFails++
			}
			if row.FaultyError == "" {
				row.FaultyError = s.err
			}
		}
		return
	}
	row.Reads++
	if rerank {
		row.Reranks++
	}
	if s.degraded {
		row.RerankDegraded++
	}
	if !s.ok {
		row.ReadFails++
		if rerank {
			row.RerankFails++
		}
		switch {
		case inferenceFailure(s.err):
			row.InferenceFails++
			if row.InferenceError == "" {
				row.InferenceError = fmt.Sprintf("node %d: %s", s.node, s.err)
			}
		case row.FirstError == "":
			row.FirstError = fmt.Sprintf("node %d: %s", s.node, s.err)
		}
	}
}

// unreranked reports whether a reranked search's hits came back with a
// degraded rerank score: hybrank's sidecar answers a rerank call it could
// not score within its budget (server's weaviate.rerank_budget) with
// scores −1, −2, … in the order sent, below every model score.
func unreranked(hits []Hit) bool {
	for _, h := range hits {
		if h.Rerank < 0 {
			return true
		}
	}
	return false
}

// inferenceFailure reports whether a failed search's error is Weaviate
// passing on its reranker's ("client rank: …") or vectorizer's
// ("vectorize …") failure.
func inferenceFailure(err string) bool {
	return strings.Contains(err, "client rank") || strings.Contains(err, "vectorize")
}

// catchUp checks every acknowledged object on every replica, reading
// each node's own copy, and rechecks the missing ones every 2 s until none
// is missing or Faults.CatchUp has passed.
func (r *faultRun) catchUp(ctx context.Context, res *FaultResult) error {
	type pair struct {
		id   string
		node int
	}
	var missing []pair
	for _, s := range r.samples {
		for _, id := range s.acked {
			for n := range r.nodes {
				missing = append(missing, pair{id, n})
			}
		}
	}
	start := time.Now()
	res.MissingAtEnd = map[string]int{}
	for round := 0; ; round++ {
		var (
			mu    sync.Mutex // guards still and firstErr
			still []pair
			first error
			wg    sync.WaitGroup
			next  atomic.Int64
		)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					k := int(next.Add(1) - 1)
					if k >= len(missing) || ctx.Err() != nil {
						return
					}
					p := missing[k]
					n := r.nodes[p.node]
					ok, err := r.w.onReplica(ctx, n.HTTP, r.class, p.id, n.Name)
					if !ok {
						mu.Lock()
						still = append(still, p)
						if err != nil && first == nil {
							first = err
						}
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return err
		}
		if round == 0 {
			for _, p := range still {
				res.MissingAtEnd[r.nodes[p.node].Name]++
			}
			r.event("catch-up check: %d of %d object × replica pairs missing (%d objects acknowledged, %d replicas each)", len(still), len(missing), res.Acked, len(r.nodes))
		}
		missing = still
		if len(missing) == 0 || time.Since(start) > r.cfg.Faults.CatchUp {
			res.Missing = len(missing)
			res.CatchUpS = measure.Round(time.Since(start).Seconds(), 2)
			if len(missing) == 0 {
				r.event("every acknowledged object is on every replica (%.2fs after the load stopped)", res.CatchUpS)
			} else {
				msg := ""
				if first != nil {
					msg = ": " + clip(first.Error(), 200)
				}
				r.event("%d object × replica pairs still missing after %v%s", len(missing), r.cfg.Faults.CatchUp, msg)
			}
			break
		}
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	res.NodeCounts = map[string]map[string]int{}
	if st, err := r.w.nodes(ctx, r.nodes[0].HTTP, r.class); err == nil {
		for _, n := range st {
			res.NodeCounts[n.Name] = n.Shards
		}
	}
	return nil
}
