package server

import (
	"errors"
	"testing"

	"github.com/hybrank/hybrank/engine"
)

// Every decoder must turn any input into a valid request or an *apiError
// with a 4xx status, never panic, and never hand on a request that breaks
// the limits it checks.

var fuzzLimits = limits{maxDocuments: 8, maxInputs: 8, maxIndexDocuments: 8}

func checkDecodeErr(t *testing.T, err error) {
	t.Helper()
	var ae *apiError
	if !errors.As(err, &ae) {
		t.Fatalf("decoder error %v (%T) is not an *apiError", err, err)
	}
	if ae.status < 400 || ae.status > 499 || ae.msg == "" || ae.typ == "" {
		t.Fatalf("decoder error %+v is not a described 4xx", ae)
	}
}

func FuzzDecodeRerank(f *testing.F) {
	for _, s := range []string{
		`{"query": "q", "documents": ["a", "b"]}`,
		`{"model": "m", "query": "q", "documents": [{"text": "a"}, "b"], "top_n": 1, "return_documents": true, "max_tokens_per_doc": 5}`,
		`{"query": "q", "texts": ["a"], "raw_scores": true, "return_text": true, "truncate": true}`,
		`{"query": "q", "documents": [1]}`, `{"query": "", "documents": ["a"]}`, `{"query": "q", "top_n": -1, "documents": ["a"]}`,
		`{"query": "q", "documents": ["a","a","a","a","a","a","a","a","a"]}`, `[]`, `{`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeRerank(body, fuzzLimits)
		if err != nil {
			checkDecodeErr(t, err)
			return
		}
		if r.Query == "" || len(r.Docs) == 0 || len(r.Docs) > fuzzLimits.maxDocuments || r.TopN < 0 || r.TopN > len(r.Docs) || r.MaxTokensPerDoc < 0 {
			t.Fatalf("decoded an invalid request %+v", r)
		}
	})
}

func checkEmbed(t *testing.T, r embedRequest, err error) {
	t.Helper()
	if err != nil {
		checkDecodeErr(t, err)
		return
	}
	if r.Dimensions < 0 {
		t.Fatalf("decoded an invalid request %+v", r)
	}
	checkInputsDecoded(t, r.Inputs)
}

// checkInputsDecoded checks the inputs of a decoded embed or tokenize
// request against what checkInputs promises.
func checkInputsDecoded(t *testing.T, inputs []string) {
	t.Helper()
	if len(inputs) == 0 || len(inputs) > fuzzLimits.maxInputs {
		t.Fatalf("decoded %d inputs", len(inputs))
	}
	for _, s := range inputs {
		if s == "" {
			t.Fatal("empty input passed")
		}
	}
}

func FuzzDecodeEmbed(f *testing.F) {
	for _, s := range []string{
		`{"inputs": "a"}`, `{"inputs": ["a", "b"], "normalize": false, "truncate": true}`,
		`{"inputs": [[1, 2]]}`, `{"inputs": []}`, `{"inputs": [""]}`, `{"inputs": 3}`, `{}`, `{"inputs": null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeEmbed(body, fuzzLimits)
		checkEmbed(t, r, err)
	})
}

func FuzzDecodeOpenAIEmbed(f *testing.F) {
	for _, s := range []string{
		`{"input": "a", "model": "m"}`, `{"input": ["a", "b"], "encoding_format": "base64", "dimensions": 4}`,
		`{"input": "a", "encoding_format": "hex"}`, `{"input": "a", "dimensions": 0}`, `{"input": [1]}`, `{"input": "a", "user": 5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeOpenAIEmbed(body, fuzzLimits)
		checkEmbed(t, r, err)
	})
}

func FuzzDecodeSearch(f *testing.F) {
	for _, s := range []string{
		`{"query": "q"}`,
		`{"query": "q", "tenant": "t", "top_k": 10, "fusion": "weighted", "alpha": 0.75, "rerank": "balanced", "candidates": 100, "filter": {"lang": "en"}, "budget_ms": 50, "mmr_lambda": 0.5, "expand": {"hops": 1, "decay": 0.5, "seeds": 3}, "token_budget": 100, "reserve": 10, "rrf_k": 60}`,
		`{"query": "q", "alpha": 2}`, `{"query": "q", "fusion": "x"}`, `{"query": "q", "expand": {"hops": 9}}`, `{"query": "q", "top_k": 1e9}`, `{"query": "q", "filter": {"a": 1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeSearch(body, fuzzLimits)
		if err != nil {
			checkDecodeErr(t, err)
			return
		}
		if r.Query == "" || r.TopK < 0 || r.TopK > engine.MaxTopK || (r.Alpha != nil && (*r.Alpha < 0 || *r.Alpha > 1)) || r.Candidates < 0 || r.Budget < 0 ||
			r.MMRLambda < 0 || r.MMRLambda > 1 || r.Expand.Hops < 0 || r.Expand.Hops > engine.MaxHops || (r.TokenBudget > 0 && r.Reserve >= r.TokenBudget) {
			t.Fatalf("decoded an invalid request %+v", r)
		}
	})
}

func FuzzDecodeDocuments(f *testing.F) {
	for _, s := range []string{
		`{"documents": [{"id": "a", "text": "t", "title": "x", "tenant": "t", "metadata": {"k": "v"}, "source": "s", "span": {"start": 0, "end": 3}, "links": ["b"]}], "delete": ["c"]}`,
		`{"ids": ["a", "b"]}`, `{"documents": [{"id": ""}]}`, `{"documents": [{"id": "a"}, {"id": "a"}]}`, `{"delete": [""]}`,
		`{"documents": [{"id": "a", "tenant": "x"}, {"id": "a"}], "delete": ["a"]}`,
		`{"documents": [{"id": "a", "span": {"start": 3, "end": 1}}]}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, del bool) {
		r, err := decodeDocuments(body, fuzzLimits, del)
		if err != nil {
			checkDecodeErr(t, err)
			return
		}
		n := len(r.Upserts) + len(r.Deletes)
		if n == 0 || n > fuzzLimits.maxIndexDocuments || (del && len(r.Upserts) > 0) {
			t.Fatalf("decoded an invalid request %+v", r)
		}
		// What the handler checks once the tenants are settled (here, as
		// without a key, as the documents say): the engine's validation.
		if err := r.Validate(); err != nil {
			if !errors.Is(err, ErrInvalid) || !errors.Is(err, engine.ErrInvalidDocument) {
				t.Fatalf("Validate: %v does not wrap ErrInvalid and engine.ErrInvalidDocument", err)
			}
			return
		}
		// A document or ID twice is the batch rule's (the last operation
		// wins), not an error; what passes has no empty ID and only valid
		// documents.
		for _, d := range r.Upserts {
			if d.ID == "" {
				t.Fatal("empty document id passed Validate")
			}
			if err := d.Validate(); err != nil {
				t.Fatalf("invalid document passed Validate: %v", err)
			}
		}
		for _, id := range r.Deletes {
			if id == "" {
				t.Fatal("empty delete id passed Validate")
			}
		}
	})
}

func FuzzDecodeTokenize(f *testing.F) {
	for _, s := range []string{
		`{"inputs": "a b"}`, `{"inputs": ["a", "b"], "add_special_tokens": false}`, `{"inputs": ["a"], "add_special_tokens": "no"}`,
		`{"inputs": [[1, 2]]}`, `{"inputs": []}`, `{"inputs": [""]}`, `{}`, `{"inputs": ["a","a","a","a","a","a","a","a","a"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeTokenize(body, fuzzLimits)
		if err != nil {
			checkDecodeErr(t, err)
			return
		}
		checkInputsDecoded(t, r.Inputs)
	})
}
