package lexical

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/internal/configtest"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/peers"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/synth"
	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/postings"
)

// TestLexicalSynthetic runs the whole driver on a small generated corpus:
// planted documents must be found, every figure must be filled in, and
// exhaustive scoring must give the same quality.
func TestLexicalSynthetic(t *testing.T) {
	sc := synth.DefaultCorpusConfig(1500)
	sc.Vocab, sc.Queries, sc.MedianLen = 5_000, 30, 60
	cfg := DefaultConfig()
	cfg.Synthetic = []synth.CorpusConfig{sc}
	cfg.Rounds, cfg.ChunkDocs = 1, 400 // several commits, then a Rebuild
	// lucene, then exhaustive scoring of the same corpus.
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 {
		t.Fatalf("%d rows", len(res.Rows))
	}
	r := res.Rows[0]
	if r.Docs != 1500 || r.Queries != 30 || r.Variant != "lucene" || r.Postings == 0 || r.QPS <= 0 || r.BytesPerP <= 0 || r.DocsPerS <= 0 {
		t.Errorf("incomplete result %+v", r)
	}
	if r.NDCG10 < 0.5 || r.Recall100 < 0.8 {
		t.Errorf("planted documents not found: ndcg %.3f recall %.3f", r.NDCG10, r.Recall100)
	}
	cfg.Exhaustive = true
	ex, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if e := ex.Rows[0]; e.NDCG10 != r.NDCG10 || e.Recall100 != r.Recall100 {
		t.Errorf("exhaustive differs: %+v vs %+v", e, r)
	}

	rep := Report(cfg, res, "bench lexical --synthetic 1500")
	if len(rep.Rows) != 1 || len(rep.Figures) != 1 || len(rep.Figures[0].Panels[0].Series) != 1 {
		t.Errorf("report %+v", rep)
	}
	want := "dataset docs queries impl variant k1 b ndcg@10 recall@100 mrr@10 index_s docs_per_s qps hybrank × p50_ms p99_ms bytes_per_posting"
	if got := strings.Join(rep.Columns, " "); got != want {
		t.Errorf("columns %s, want %s", got, want)
	}
}

// TestLexicalBEIRAnchors checks parity with bm25s (lucene, k1=1.2, b=0.75)
// on the anchor datasets of ../shared/ANCHORS.md. The anchors match when
// retrieved documents whose id equals the query id are kept, so that is
// how they are checked; the BEIR convention (the default) is reported too.
func TestLexicalBEIRAnchors(t *testing.T) {
	tests := []struct {
		name         string
		ndcg, recall float64
		tol          float64
		docs, qs     int
	}{
		{"scifact", 0.6802, 0.9127, 0.002, 5183, 300},
		{"cisi", 0.3796, 0.4351, 0.005, 1460, 76},
		{"cran", 0.3697, 0.7354, 0.005, 1400, 225},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testenv.NeedDataset(t, tt.name)
			if (testing.Short() || raceEnabled) && tt.name == "scifact" {
				t.Skip("indexes 5K documents; skipped with -short and -race")
			}
			cfg := DefaultConfig()
			cfg.Datasets, cfg.Rounds = []string{dir}, 1
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := res.Rows[0]
			if math.Abs(r.NDCG10-tt.ndcg) > tt.tol || math.Abs(r.Recall100-tt.recall) > tt.tol {
				t.Errorf("ndcg@10 %.4f recall@100 %.4f, want %.4f and %.4f ± %.3f", r.NDCG10, r.Recall100, tt.ndcg, tt.recall, tt.tol)
			}
			if r.Docs != tt.docs || r.Queries != tt.qs {
				t.Errorf("docs %d queries %d, want %d and %d", r.Docs, r.Queries, tt.docs, tt.qs)
			}
			t.Logf("%s: keep-ids ndcg@10 %.5f recall@100 %.5f; BEIR drop-ids ndcg@10 %.5f recall@100 %.5f",
				tt.name, r.NDCG10, r.Recall100, r.NDCG10OtherID, r.Recall100OtherID)
		})
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Datasets = []string{"d"}
	configtest.Check(t, ok,
		configtest.OK("default with a dataset", func(*Config) {}),
		configtest.OK("synthetic only", func(c *Config) { c.Datasets, c.Synthetic = nil, []synth.CorpusConfig{synth.DefaultCorpusConfig(10)} }),
		configtest.OK("all variants", func(c *Config) {
			c.Variants = Variants
		}),
		configtest.Bad("no corpus", func(c *Config) { c.Datasets = nil }),
		configtest.Bad("unknown variant", func(c *Config) { c.Variants = []postings.Variant{"bm26"} }),
		configtest.Bad("bad synthetic", func(c *Config) { c.Synthetic = []synth.CorpusConfig{{Docs: 0}} }),
		configtest.Bad("zero k", func(c *Config) { c.K = 0 }),
		configtest.Bad("k under recall@100's", func(c *Config) { c.K = 10 }),
		configtest.Bad("zero rounds", func(c *Config) { c.Rounds = 0 }),
		configtest.Bad("negative chunk", func(c *Config) { c.ChunkDocs = -1 }),
		configtest.Bad("bad k1", func(c *Config) { c.Index.K1 = -1 }),
		configtest.OK("peers", func(c *Config) { c.Peers.Enabled = true }),
		configtest.Bad("peers without python", func(c *Config) { c.Peers.Enabled, c.Peers.Python = true, "" }),
		configtest.Bad("negative peer decimals", func(c *Config) { c.Targets.PeerDecimals = -1 }),
	)
}

// TestPeerRows runs the driver with a stand-in for bm25s (no Python): its
// run file is scored beside hybrank's row, and the check passes when the
// nDCG@10 agree and fails when they do not.
func TestPeerRows(t *testing.T) {
	data := filepath.Join(t.TempDir(), "tiny")
	docs := []eval.Doc{
		{ID: "d1", Text: "solar panels convert sunlight into electricity"},
		{ID: "d2", Text: "wind turbines spin in strong wind"},
		{ID: "d3", Text: "bees make honey from flower nectar"},
		{ID: "d4", Text: "rivers carry water to the sea"},
	}
	qs := []eval.Query{{ID: "q1", Text: "sunlight electricity"}, {ID: "q2", Text: "honey bees"}}
	qrels := eval.Qrels{"q1": {"d1": 1}, "q2": {"d3": 1}}
	if err := eval.WriteBEIR(data, docs, qs, qrels); err != nil {
		t.Fatal(err)
	}
	pkgs := t.TempDir()
	if err := os.WriteFile(filepath.Join(pkgs, artifacts.PeersMarker), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		run     string // the stand-in's run file
		verdict string
	}{
		{"agrees", "q1\td1\t1\t3.5\nq1\td2\t2\t0.1\nq2\td3\t1\t2.0\n", report.Pass},
		{"disagrees", "q1\td2\t1\t3.5\nq1\td1\t2\t0.1\nq2\td3\t1\t2.0\n", report.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			cfg := DefaultConfig()
			cfg.Datasets, cfg.Rounds = []string{data}, 1
			cfg.Peers = peers.Config{Enabled: true, Python: "python3", Dir: pkgs,
				Exec: func(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, []byte, error) {
					got = args
					run := args[slices.Index(args, "--run")+1]
					if err := os.WriteFile(run, []byte(tt.run), 0o644); err != nil {
						return nil, nil, err
					}
					return []byte(`{"peer":"bm25s","version":"0.3.16","method":"lucene","k1":1.2,"b":0.75,"delta":0.5,"k":100,"docs":4,"queries":2,"index_s":0.01,"retrieve_s":0.001,"qps":2000,"threads":1}` + "\n"), nil, nil
				}}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) != 2 || res.Rows[0].Impl != "hybrank" || res.Rows[1].Impl != "bm25s" {
				t.Fatalf("rows %+v", res.Rows)
			}
			ours, peer := res.Rows[0], res.Rows[1]
			if ours.NDCG10 != 1 || peer.Dataset != "tiny" || peer.Variant != "lucene" || peer.QPS != 2000 || peer.DocsPerS != 400 ||
				peer.HybrankSpeedup != measure.Round(ours.QPS/2000, 2) || peer.P50Ms != 0 {
				t.Errorf("rows %+v\n%+v", ours, peer)
			}
			if !slices.Contains(got, "--method") || got[slices.Index(got, "--data")+1] != data {
				t.Errorf("bm25s args %v", got)
			}
			if len(res.Checks) != 2 || res.Checks[0].Verdict != tt.verdict || res.Checks[1].Verdict != report.Info {
				t.Fatalf("checks %v", res.Checks)
			}
			rep := Report(cfg, res, "bench lexical")
			if len(rep.Checks) != 2 || !strings.Contains(strings.Join(rep.Notes, " "), "impl=bm25s") {
				t.Errorf("report checks %v notes %v", rep.Checks, rep.Notes)
			}
		})
	}
	// Missing packages fail before anything is measured, naming make peers.
	cfg := DefaultConfig()
	cfg.Datasets, cfg.Peers.Enabled, cfg.Peers.Dir = []string{data}, true, t.TempDir()
	if _, err := Run(context.Background(), cfg); !errors.Is(err, peers.ErrNotInstalled) || !strings.Contains(err.Error(), "make peers") {
		t.Errorf("Run without the peers installed: %v", err)
	}
}

func TestTopK(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	docs := []eval.Doc{
		{ID: "a", Text: "honey bees make honey"},
		{ID: "b", Text: "bees sting"},
		{ID: "c", Text: "solar panels"},
	}
	qs := []eval.Query{{ID: "1", Text: "honey bees"}, {ID: "2", Text: "volcano"}, {ID: "3", Text: "solar"}}
	if err := eval.WriteBEIR(dir, docs, qs, eval.Qrels{"1": {"a": 1}, "2": {"b": 1}, "3": {"c": 1}}); err != nil {
		t.Fatal(err)
	}
	ds, err := eval.LoadBEIR(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := TopK(context.Background(), ds, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Query.ID != "1" || len(got[0].Docs) != 2 || got[0].Docs[0].ID != "a" || got[0].Docs[1].ID != "b" || len(got[1].Docs) != 0 {
		t.Fatalf("candidates %+v", got)
	}
	if all, err := TopK(context.Background(), ds, 0, 1); err != nil || len(all) != 3 || len(all[0].Docs) != 1 || all[2].Docs[0].Text != "solar panels" {
		t.Fatalf("all queries, top 1: %+v, %v", all, err)
	}
	if _, err := TopK(context.Background(), ds, 0, 0); err == nil {
		t.Error("top-0 accepted")
	}
}

// TestPeerCheckRoundsOnce: two figures equal at the check's 4 decimals
// pass. The rows keep them unrounded; rounded to 5 decimals first,
// 0.680249 became 0.68025 and then 0.6803 against 0.6802.
func TestPeerCheckRoundsOnce(t *testing.T) {
	qrels := eval.Qrels{"q": {"a": 1}}
	var r Row
	scoreRun(&r, qrels, eval.Run{"q": {"x", "y", "a"}}, eval.Options{})
	if r.NDCG10 != 0.5 || r.MRR10 != 1.0/3 {
		t.Fatalf("scoreRun: nDCG@10 %v, MRR@10 %v: want 0.5 and 1/3 unrounded", r.NDCG10, r.MRR10)
	}
	rows := []Row{
		{Impl: implHybrank, Dataset: "scifact", Variant: "lucene", NDCG10: 0.680249},
		{Impl: "bm25s", Dataset: "scifact", Variant: "lucene", NDCG10: 0.680241},
	}
	for _, c := range DefaultTargets().Check(rows) {
		if !c.Passed() {
			t.Errorf("%s", c)
		}
	}
}

// TestPeerDecimals: agreement to 4 decimals is |Δ| ≤ 0.00005 of the
// figures as measured, not of each rounded on its own.
func TestPeerDecimals(t *testing.T) {
	for _, tc := range []struct {
		ours, peer float64
		want       string
	}{
		{0.68025, 0.680249999, report.Pass}, // rounded apart: 0.6803 vs 0.6802
		{0.68015, 0.68024999, report.Fail},  // rounded together: both 0.6802
		{0.6802, 0.68024, report.Pass},
	} {
		rows := []Row{{Impl: implHybrank, Dataset: "d", Variant: "v", NDCG10: tc.ours}, {Impl: "bm25s", Dataset: "d", Variant: "v", NDCG10: tc.peer}}
		if cs := DefaultTargets().Check(rows); len(cs) != 1 || cs[0].Verdict != tc.want {
			t.Errorf("%v vs %v: %+v, want %s", tc.ours, tc.peer, cs, tc.want)
		}
	}
}
