package throughput

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// Text is the input of a run: a few queries and the documents (or texts).
// Call i of a cross-encoder scores Queries[i % len(Queries)] against Docs,
// or against that query's own documents when PerQuery is set (real
// candidate lists, one per query).
type Text struct {
	Queries  []string
	Docs     []string
	PerQuery [][]string
}

// docs returns the documents of call i.
func (t Text) docs(i int) []string {
	if t.PerQuery != nil {
		return t.PerQuery[i%len(t.PerQuery)]
	}
	return t.Docs
}

// MakeText builds s.Pairs documents of exactly s.DocTokens word pieces and
// a few queries of about s.QueryTokens: from s.Data's corpus (documents
// cut, repeated when too few are long enough) or, without Data, from
// whole-word vocabulary entries of tok (seeded by s.Seed).
func MakeText(s Spec, tok *wordpiece.Tokenizer) (Text, error) {
	if s.Data != "" {
		return beirText(s, tok)
	}
	r := rand.New(rand.NewPCG(s.Seed, 0x72657261))
	words := vocabWords(tok)
	if len(words) < 100 {
		return Text{}, fmt.Errorf("vocabulary has only %d whole words", len(words))
	}
	text := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		return b.String()
	}
	var t Text
	for range 8 {
		t.Queries = append(t.Queries, text(s.QueryTokens))
	}
	for range s.Pairs {
		t.Docs = append(t.Docs, text(s.DocTokens))
	}
	return t, nil
}

func beirText(s Spec, tok *wordpiece.Tokenizer) (Text, error) {
	var t Text
	ds, err := eval.LoadBEIR(s.Data)
	if err != nil {
		return t, err
	}
	for _, q := range ds.Queries {
		t.Queries = append(t.Queries, q.Text)
	}
	for _, d := range ds.Docs {
		ids := tok.Tokens(d.IndexText())
		if len(ids) < s.DocTokens {
			continue
		}
		t.Docs = append(t.Docs, joinPieces(ids[:s.DocTokens]))
		if len(t.Docs) == s.Pairs {
			break
		}
	}
	if len(t.Docs) == 0 || len(t.Queries) == 0 {
		return t, fmt.Errorf("%s: no documents with %d tokens", s.Data, s.DocTokens)
	}
	for i := 0; len(t.Docs) < s.Pairs; i++ {
		t.Docs = append(t.Docs, t.Docs[i])
	}
	return t, nil
}

// vocabWords returns the whole-word entries of the tokenizer's vocabulary
// (3+ lowercase letters): each one is a single word piece, so n words make
// exactly n tokens.
func vocabWords(tok *wordpiece.Tokenizer) []string {
	var words []string
	for id := range tok.VocabSize() {
		s := tok.IDToToken(int32(id))
		if len(s) < 3 {
			continue
		}
		ok := true
		for _, r := range s {
			if r < 'a' || r > 'z' {
				ok = false
				break
			}
		}
		if ok && tok.CountTokens(s) == 1 {
			words = append(words, s)
		}
	}
	return words
}

// joinPieces turns word pieces back into text that tokenizes to them.
func joinPieces(pieces []string) string {
	var b strings.Builder
	for i, p := range pieces {
		if rest, ok := strings.CutPrefix(p, "##"); ok {
			b.WriteString(rest)
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}
