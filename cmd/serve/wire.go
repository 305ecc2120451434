package main

import (
	"context"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/models/wordpiece"
	"github.com/hybrank/hybrank/server"
)

// The adapters below only convert between models' and server's types.

type scorer struct{ ce *ort.CrossEncoder }

func (s scorer) ScorePairs(ctx context.Context, pairs []server.Pair) ([]float32, server.Usage, error) {
	mp := make([]models.Pair, len(pairs))
	for i, p := range pairs {
		mp[i] = models.Pair{Query: p.Query, Doc: p.Doc}
	}
	scores, u, err := s.ce.ScorePairs(ctx, mp)
	return scores, server.Usage{Tokens: u.Tokens, Pairs: u.Pairs, Batches: u.Batches}, err
}

type embedder struct{ be *ort.BiEncoder }

func (e embedder) EmbedWithUsage(ctx context.Context, texts []string) ([][]float32, server.Usage, error) {
	v, u, err := e.be.EmbedWithUsage(ctx, models.InputRaw, texts)
	return v, server.Usage{Tokens: u.Tokens, Pairs: u.Pairs, Batches: u.Batches}, err
}

func (e embedder) Dim() int { return e.be.Dim() }

type tokenizer struct{ t *wordpiece.Tokenizer }

func (t tokenizer) CountTokens(text string) int { return t.t.CountTokens(text) }

func (t tokenizer) Tokenize(text string, addSpecial bool) ([]server.Token, error) {
	ids := t.t.IDs(nil, text)
	out := make([]server.Token, 0, len(ids)+2)
	special := func(tok string) {
		if id, ok := t.t.TokenToID(tok); ok {
			out = append(out, server.Token{ID: int(id), Text: tok, Special: true})
		}
	}
	if addSpecial {
		special("[CLS]")
	}
	for _, id := range ids {
		out = append(out, server.Token{ID: int(id), Text: t.t.IDToToken(id)})
	}
	if addSpecial {
		special("[SEP]")
	}
	return out, nil
}
