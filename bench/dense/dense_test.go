package dense

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench/internal/configtest"
	"github.com/hybrank/hybrank/bench/peers"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/synth"
	"github.com/hybrank/hybrank/internal/artifacts"
)

func TestConfigValidate(t *testing.T) {
	configtest.Check(t, DefaultConfig(),
		configtest.OK("default", func(*Config) {}),
		configtest.Bad("zero n", func(c *Config) { c.N = 0 }),
		configtest.Bad("zero k", func(c *Config) { c.K = 0 }),
		configtest.Bad("no M", func(c *Config) { c.Ms = nil }),
		configtest.Bad("M 1", func(c *Config) { c.Ms = []int{1} }),
		configtest.Bad("ef 0", func(c *Config) { c.Efs = []int{16, 0} }),
		configtest.Bad("no clusters", func(c *Config) { c.Clusters = 0 }),
		configtest.Bad("negative noise", func(c *Config) { c.Noise = -1 }),
		configtest.Bad("zero efc", func(c *Config) { c.EfConstruction = 0 }),
		configtest.OK("given vectors", func(c *Config) {
			c.N, c.Dim, c.Vectors = 0, 0, &Vectors{Name: "v", Base: [][]float32{{1, 0}, {0, 1}}, Queries: [][]float32{{1, 1}}}
		}),
		configtest.Bad("no base vectors", func(c *Config) { c.Vectors = &Vectors{Queries: [][]float32{{1}}} }),
		configtest.Bad("ragged vectors", func(c *Config) {
			c.Vectors = &Vectors{Base: [][]float32{{1, 0}, {0, 1}}, Queries: [][]float32{{1, 1, 1}}}
		}),
		configtest.Bad("peers without python", func(c *Config) { c.Peers.Enabled, c.Peers.Python = true, "" }),
		configtest.Bad("recall target above 1", func(c *Config) { c.Targets.MinRecall = 1.5 }),
	)
}

// TestGivenVectors runs the driver on vectors it did not generate: rows
// take their sizes and name from them.
func TestGivenVectors(t *testing.T) {
	syn, err := synth.Vectors(context.Background(), synth.VectorConfig{N: 230, Dim: 12, Clusters: 5, Rank: 3, Noise: 0.3, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Vectors = &Vectors{Name: "given", Base: syn[:200], Queries: syn[200:]}
	cfg.Ms, cfg.Efs, cfg.EfConstruction = []int{6}, []int{100}, 40
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.Data != "given" || r.N != 200 || r.Queries != 30 || r.Dim != 12 || r.Impl != "hybrank" {
			t.Errorf("row %+v", r)
		}
	}
	if len(res.Rows) != 2 || res.Rows[1].RecallAtK < 0.95 {
		t.Errorf("rows %+v", res.Rows)
	}
	if rep := Report(cfg, res, "bench dense"); !strings.Contains(rep.Notes[0], "given, 200 base and 30 query vectors of dimension 12") {
		t.Errorf("notes %q", rep.Notes[0])
	}
}

// TestPeerRows runs the driver with a stand-in for faiss (no Python) that
// returns the first K vectors for every query: its recall is scored
// against the same truth and the rows carry the QPS ratio.
func TestPeerRows(t *testing.T) {
	pkgs := t.TempDir()
	if err := os.WriteFile(filepath.Join(pkgs, artifacts.PeersMarker), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.N, cfg.Dim, cfg.Queries, cfg.Clusters, cfg.Rank = 300, 8, 10, 4, 2
	cfg.Ms, cfg.Efs, cfg.EfConstruction, cfg.K = []int{4, 8}, []int{8, 64}, 32, 5
	var flags [][]string
	cfg.Peers = peers.Config{Enabled: true, Python: "python3", Dir: pkgs,
		Exec: func(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, []byte, error) {
			flags = append(flags, args)
			arg := func(f string) string { return args[slices.Index(args, f)+1] }
			if st, err := os.Stat(arg("--base")); err != nil || st.Size() != 300*8*4 || arg("--dim") != "8" || arg("--k") != "5" {
				return nil, nil, fmt.Errorf("base %v, args %v", err, args)
			}
			var rows []string
			for _, ef := range strings.Split(arg("--ef"), ",") {
				var ids []byte
				for range 10 {
					for id := range 5 {
						ids = binary.LittleEndian.AppendUint64(ids, uint64(id))
					}
				}
				path := arg("--out") + ".ef" + ef + ".i64"
				if err := os.WriteFile(path, ids, 0o644); err != nil {
					return nil, nil, err
				}
				rows = append(rows, fmt.Sprintf(`{"ef":%s,"search_s":0.001,"qps":10000,"ids":%q}`, ef, path))
			}
			return []byte(`{"version":"1.15.1","m":` + arg("--m") + `,"build_s":0.02,"rows":[` + strings.Join(rows, ",") + "]}\n"), nil, nil
		}}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// flat, then per M: 2 hybrank rows and 2 faiss rows.
	if len(res.Rows) != 9 || len(flags) != 2 || res.Rows[3].Impl != "faiss" || res.Rows[4].EfSearch != 64 || res.Rows[8].M != 8 {
		t.Fatalf("rows %+v", res.Rows)
	}
	f := res.Rows[4]
	if f.Version != "1.15.1" || f.QPS != 10000 || f.BuildS != 0.02 || f.RecallAtK >= 0.95 || f.HybrankSpeedup != res.Rows[2].QPS/10000 || f.N != 300 {
		t.Errorf("faiss row %+v (hybrank %+v)", f, res.Rows[2])
	}
	if len(res.Checks) != 2 || res.Checks[0].Verdict != report.Info {
		t.Errorf("checks %v", res.Checks)
	}
}

func TestTargetsCheck(t *testing.T) {
	row := func(impl string, ef int, recall, qps float64) Row {
		return Row{Impl: impl, Kind: kindHNSW, M: 16, EfSearch: ef, RecallAtK: recall, QPS: qps}
	}
	tg := DefaultTargets()
	tests := []struct {
		name    string
		rows    []Row
		verdict string
		value   float64
	}{
		{"no peer", []Row{row("hybrank", 16, 0.99, 100)}, "", 0},
		{"pass", []Row{row("hybrank", 16, 0.90, 900), row("hybrank", 64, 0.97, 600), row("faiss", 16, 0.96, 1000), row("faiss", 64, 0.99, 500)}, report.Pass, 0.6},
		{"fail", []Row{row("hybrank", 64, 0.97, 400), row("faiss", 16, 0.96, 1000)}, report.Fail, 0.4},
		{"hybrank short of the recall", []Row{row("hybrank", 64, 0.9, 400), row("faiss", 16, 0.96, 1000)}, report.Fail, 0},
		{"peer short of the recall", []Row{row("hybrank", 64, 0.97, 400), row("faiss", 16, 0.9, 1000)}, report.Info, 0},
	}
	// Without a speed bar a hybrank short of the recall still fails.
	if cs := (Targets{MinRecall: tg.MinRecall}).Check([]Row{row("hybrank", 64, 0.2, 400), row("faiss", 16, 0.96, 1000)}); len(cs) != 1 || cs[0].Verdict != report.Fail {
		t.Fatalf("hybrank short of the recall with MinSpeedup 0: %v", cs)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := tg.Check(tt.rows)
			if tt.verdict == "" {
				if len(cs) != 0 {
					t.Fatalf("checks %v", cs)
				}
				return
			}
			if len(cs) != 1 || cs[0].Verdict != tt.verdict || cs[0].Value != tt.value {
				t.Fatalf("checks %v, want %s %v", cs, tt.verdict, tt.value)
			}
		})
	}
}

// TestRunSmall sweeps a tiny index: the flat row is the truth, recall grows
// to nearly 1 with ef, and the report has the dense.md columns.
func TestRunSmall(t *testing.T) {
	cfg := DefaultConfig()
	cfg.N, cfg.Dim, cfg.Queries, cfg.Clusters, cfg.Rank = 400, 16, 20, 8, 4
	cfg.Ms, cfg.Efs, cfg.EfConstruction = []int{8}, []int{1, 200}, 64
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || res.Rows[0].Kind != "flat" || res.Rows[0].RecallAtK != 1 || res.Rows[0].M != 0 {
		t.Fatalf("rows %+v", res.Rows)
	}
	lo, hi := res.Rows[1], res.Rows[2]
	if lo.Kind != "hnsw" || lo.M != 8 || lo.EfSearch != 1 || hi.EfSearch != 200 || hi.RecallAtK < 0.95 || hi.RecallAtK < lo.RecallAtK || hi.QPS <= 0 || hi.BuildS < 0 {
		t.Fatalf("hnsw rows %+v / %+v", lo, hi)
	}
	rep := Report(cfg, res, "bench dense")
	if got := strings.Join(rep.Columns, " "); got != "impl kind m ef_search build_s recall_at_k qps hybrank × p50_ms p99_ms" || len(rep.Rows) != 3 {
		t.Fatalf("report columns %q, %d rows", got, len(rep.Rows))
	}
}
