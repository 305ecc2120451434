package eval

import "github.com/hybrank/hybrank/internal/beir"

// The BEIR layout is read by internal/beir (also used below bench, by
// tests and testing.B benchmarks that need real texts); these names keep
// the benchmarks' vocabulary in one place.
type (
	// Doc is one corpus document.
	Doc = beir.Doc
	// Query is one query.
	Query = beir.Query
	// Qrels maps query id → document id → graded relevance.
	Qrels = beir.Qrels
	// Dataset is a BEIR-layout collection restricted to judged queries.
	Dataset = beir.Dataset
)

// LoadBEIR reads a BEIR folder (beir.Load).
func LoadBEIR(dir string) (*Dataset, error) { return beir.Load(dir) }

// WriteBEIR writes a BEIR folder (beir.Write).
func WriteBEIR(dir string, docs []Doc, queries []Query, qrels Qrels) error {
	return beir.Write(dir, docs, queries, qrels)
}
