package server

import (
	"context"
	"net/http"
)

// POST /analyze: the index's text analysis, for engines that index text
// with an analysis of their own. Weaviate's BM25F has no stemming; a
// collection that stores these terms in a property of tokenization
// "whitespace", and searches it with a query's terms, ranks by BM25 over
// the terms hybrank's engine indexes (README, "Scaling out").
//
//	{"inputs": "text" | ["text", ...], "input_type": "document" | "query"}
//	  -> {"analyzer": "<version>", "terms": [["term", ...], ...]}
//
// input_type "query" (default "document") analyzes as the engine analyzes
// a query: with the analyzer's query expansion, where it has one.
// analyzer is the analysis's version (analysis.Config.Version): equal
// versions give equal terms. A text with no terms (stopwords only) gets
// an empty list.

// analyzeRequest is a decoded /analyze call.
type analyzeRequest struct {
	Inputs []string
	Query  bool
}

// analyzeResponse is the /analyze reply.
type analyzeResponse struct {
	Analyzer string     `json:"analyzer"`
	Terms    [][]string `json:"terms"`
}

func decodeAnalyze(body []byte, lim limits) (analyzeRequest, error) {
	var w struct {
		Inputs    stringOrList `json:"inputs"`
		InputType string       `json:"input_type"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return analyzeRequest{}, err
	}
	if err := checkInputs(w.Inputs, "inputs", lim); err != nil {
		return analyzeRequest{}, err
	}
	r := analyzeRequest{Inputs: w.Inputs.vals}
	switch w.InputType {
	case "", "document":
	case "query":
		r.Query = true
	default:
		return r, badRequest("field \"input_type\" is %q; want \"document\" or \"query\"", w.InputType)
	}
	return r, nil
}

func (s *Server) analyzeEndpoint() endpoint[analyzeRequest] {
	return endpoint[analyzeRequest]{
		decode: func(_ *http.Request, body []byte) (analyzeRequest, error) { return decodeAnalyze(body, s.lim) },
		authorize: func(*http.Request, *analyzeRequest) error {
			if s.b.Analyzer == nil {
				return notConfigured("analyzer")
			}
			return nil
		},
		admit: true,
		call: func(ctx context.Context, _ *http.Request, req analyzeRequest) (reply, error) {
			a := s.b.Analyzer
			out := analyzeResponse{Analyzer: a.Version(), Terms: make([][]string, len(req.Inputs))}
			for i, t := range req.Inputs {
				if err := ctx.Err(); err != nil {
					return reply{}, err
				}
				terms := a.Analyze
				if req.Query {
					terms = a.AnalyzeQuery
				}
				if out.Terms[i] = terms(t); out.Terms[i] == nil {
					out.Terms[i] = []string{}
				}
			}
			return reply{body: out}, nil
		},
	}
}
