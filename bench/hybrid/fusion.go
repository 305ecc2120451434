package hybrid

import (
	"fmt"
	"path/filepath"

	"github.com/hybrank/hybrank/bench/report"
)

// fusedOnly reports whether a setup name is a plain fusion (rrf,
// weighted-α, relative): both retrievers, no reranker, no MMR.
func fusedOnly(s Setup) bool { return s.Dense && s.Alpha != 1 && s.Rerank == "" && s.MMRLambda == 0 }

// FusionChoice picks the fusion setup with the best nDCG@10 on the dataset
// tuneOn and checks it, unchanged, on every other dataset against the
// better single retriever there (bm25 or dense): chosen − best single ≥ 0.
// It also returns one note per dataset naming the fusion that wins there.
// No tuneOn, or no fused row on it, gives nothing.
func FusionChoice(rows []Row, setups []Setup, tuneOn string) ([]report.Check, []string) {
	if tuneOn == "" {
		return nil, nil
	}
	fused := map[string]bool{}
	for _, s := range setups {
		fused[s.Name] = fusedOnly(s)
	}
	var datasets []string
	by := map[string]map[string]float64{}
	for _, r := range rows {
		if by[r.Dataset] == nil {
			by[r.Dataset] = map[string]float64{}
			datasets = append(datasets, r.Dataset)
		}
		by[r.Dataset][r.Config] = r.NDCG10
	}
	best := func(ds string) (string, float64) {
		name, v := "", -1.0
		for _, r := range rows { // rows order: ties go to the matrix's first
			if r.Dataset == ds && fused[r.Config] && r.NDCG10 > v {
				name, v = r.Config, r.NDCG10
			}
		}
		return name, v
	}
	chosen, _ := best(tuneOn)
	if chosen == "" {
		return nil, nil
	}
	var cs []report.Check
	var notes []string
	for _, ds := range datasets {
		win, v := best(ds)
		single, sv, haveSingle := "", 0.0, false
		for _, name := range []string{"bm25", "dense"} {
			if x, ok := by[ds][name]; ok && (!haveSingle || x > sv) {
				single, sv, haveSingle = name, x, true
			}
		}
		if !haveSingle {
			// The setups ran no single retriever here: nothing to beat.
			notes = append(notes, fmt.Sprintf("%s: best fusion %s (nDCG@10 %.4f); no single retriever ran.", ds, win, v))
			continue
		}
		notes = append(notes, fmt.Sprintf("%s: best fusion %s (nDCG@10 %.4f); better single retriever %s (%.4f).", ds, win, v, single, sv))
		c, ok := by[ds][chosen]
		if ds == tuneOn || !ok {
			continue
		}
		// Compared unrounded: rounding first could lift a loss onto 0.
		cs = append(cs, report.AtLeast(fmt.Sprintf("%s: %s (chosen on %s) nDCG@10 − %s", ds, chosen, tuneOn, single),
			c-sv, 0, fmt.Sprintf("%s %.4f, %s %.4f", chosen, c, single, sv)))
	}
	return cs, notes
}

// datasetName is the name rows carry for a dataset folder.
func datasetName(dir string) string { return filepath.Base(filepath.Clean(dir)) }
