package throughput

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/models"
)

// Report renders res as bench/results/NAME.md with NAME.svg: pairs (or
// texts) per second against batch size, one panel per profile and one
// line per doc-token length, thread count and pool size.
func Report(name string, cfg Config, res Result, command string) report.Report {
	unit, title := "pairs", "Cross-encoder reranking throughput"
	if cfg.Kind == models.KindEmbedder {
		unit, title = "texts", "Bi-encoder embedding throughput"
	}
	return report.Report{
		Title: title, Command: command, Config: cfg, Columns: report.Columns(Row{}),
		Rows: report.Rows(res.Rows),
		Notes: []string{
			"gflops is effective: pairs × modeldir.NarrowedFLOPs(shape, real sequence length, narrowing) / time (padding not counted; " +
				"the work the graph does: a cross-encoder whose fusion says \"first token\" runs its last layer past keys and values for [CLS] only); " +
				"gflops_best uses the fastest call; peak_gflops is the best of 5 runs of an n×n float32 MatMul through the same runtime and thread count, measured right after each row's model runs; efficiency = gflops / peak_gflops.",
			"real_weights=false: generated models with seeded random weights (bertgen) — the shape and ONNX operators of the " +
				"Hugging Face exports, so speed is representative and scores are meaningless.",
		},
		Figures: []report.Figure{{Alt: unit + "/s against batch size", Panels: plot(res.Rows, title, unit)}},
	}
}

// plot draws one panel per profile, one line per (doc tokens, threads,
// pool).
func plot(rows []Row, title, unit string) []report.Plot {
	var panels []report.Plot
	panelOf := map[string]int{}
	seriesOf := map[string]int{}
	for _, r := range rows {
		pi, ok := panelOf[r.Profile]
		if !ok {
			pi = len(panels)
			panelOf[r.Profile] = pi
			panels = append(panels, report.Plot{Title: title + ": " + r.Profile, XLabel: "batch size (" + unit + " per runtime call)",
				YLabel: unit + "/s", LogX: true, LogY: true})
		}
		name := fmt.Sprintf("%d tokens, %d threads", r.DocTokens, r.Threads)
		if r.PoolSize > 1 {
			name += fmt.Sprintf(", pool %d", r.PoolSize)
		}
		k := r.Profile + "\x00" + name
		si, ok := seriesOf[k]
		if !ok {
			si = len(panels[pi].Series)
			seriesOf[k] = si
			panels[pi].Series = append(panels[pi].Series, report.Series{Name: name})
		}
		s := &panels[pi].Series[si]
		s.X = append(s.X, float64(r.BatchPairs))
		s.Y = append(s.Y, r.PairsPerS)
	}
	return panels
}

// ReadRows reads the JSON lines printed by `bench rerank --json` (or
// embed), for re-rendering a report without re-running it.
func ReadRows(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Row
	dec := json.NewDecoder(f)
	for {
		var r Row
		if err := dec.Decode(&r); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("%s: result %d: %w", path, len(out)+1, err)
		}
		out = append(out, r)
	}
}
