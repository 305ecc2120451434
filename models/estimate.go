package models

import (
	"math"
	"unicode/utf8"
)

// Sigmoid maps a cross-encoder logit to a relevance probability in (0, 1):
// 1 / (1 + e^-logit), computed in float64. It is the one definition the
// runtime (Config.Sigmoid) and the server (relevance_score) share.
func Sigmoid(logit float32) float64 { return 1 / (1 + math.Exp(-float64(logit))) }

// EstimateTokens approximates a WordPiece token count without a
// tokenizer: one token per word plus one per 6 bytes beyond the first 6 of
// a word, and one per ASCII punctuation character. It is cheap and
// allocation-free, for where speed matters more than exactness: the
// server's batch caps and its counts when no tokenizer is loaded, the
// engine's packing when it has no TokenCounter, and the lengths its
// budgeted rerank loop predicts batches from (on scifact documents the
// estimate is 0.93–1.25× the WordPiece count, median 1.07).
func EstimateTokens(text string) int { return EstimateTokensUpTo(text, math.MaxInt) }

// EstimateTokensUpTo is min(EstimateTokens(text), limit), reading text only
// until the count reaches limit: the cost of a text that will be cut to a
// window is that of the window, however long the text (0 when limit ≤ 0).
func EstimateTokensUpTo(text string, limit int) int {
	if limit <= 0 {
		return 0
	}
	n, wordLen := 0, 0
	for _, r := range text {
		if n >= limit {
			return limit
		}
		switch {
		case r == ' ' || r == '\n' || r == '\t' || r == '\r':
			wordLen = 0
		case r < utf8.RuneSelf && !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			n++ // punctuation is its own token
			wordLen = 0
		default:
			if wordLen%6 == 0 {
				n++
			}
			wordLen++
		}
	}
	return min(n, limit)
}

// PairSpecialTokens are the special tokens a cross-encoder adds to a pair:
// [CLS] query [SEP] document [SEP].
const PairSpecialTokens = 3

// EstimatePairTokens approximates the tokens of a cross-encoder pair
// (EstimateTokens of both texts and the special tokens), before any cut to
// the model's window.
func EstimatePairTokens(query, doc string) int {
	return EstimatePairTokensWith(EstimateTokens(query), doc)
}

// EstimatePairTokensWith is EstimatePairTokens for a query already
// estimated at queryTokens: for callers pairing one query with many
// documents.
func EstimatePairTokensWith(queryTokens int, doc string) int {
	return queryTokens + EstimateTokens(doc) + PairSpecialTokens
}

// EstimatePairTokensUpTo is min(EstimatePairTokens(query, doc), limit),
// reading the texts only as far as limit needs: a batch cap's cost of a
// pair, which the model cuts to its window anyway, stays bounded by the
// window when the query or the document is megabytes long.
func EstimatePairTokensUpTo(query, doc string, limit int) int {
	q := EstimateTokensUpTo(query, limit-PairSpecialTokens)
	return max(0, min(q+EstimateTokensUpTo(doc, limit-PairSpecialTokens-q)+PairSpecialTokens, limit))
}
