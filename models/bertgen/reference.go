package bertgen

import (
	"context"
	"fmt"
	"math"
)

// RefOutput is the result of Reference for a batch.
type RefOutput struct {
	// Logits has one score per sequence (cross-encoders; nil otherwise).
	Logits []float64
	// LastHiddenState is [batch][seq][hidden] (bi-encoders; nil otherwise).
	// Rows of padded positions are computed too, as the ONNX model does.
	LastHiddenState [][][]float64
}

// Reference runs w's BERT forward pass in float64 pure Go, written
// independently of the ONNX graph from the BERT definition, as the oracle for
// what ONNX Runtime computes. inputIDs, attentionMask and tokenTypeIDs are
// [batch][seq] with equal sequence lengths (pad with mask 0). It is slow
// (no SIMD, no blocking); use it on small configs. It polls ctx once per
// sequence and layer.
func Reference(ctx context.Context, w *Weights, inputIDs, attentionMask, tokenTypeIDs [][]int64) (*RefOutput, error) {
	cfg := w.Config
	if err := checkBatch(cfg, inputIDs, attentionMask, tokenTypeIDs); err != nil {
		return nil, err
	}
	out := &RefOutput{}
	for b := range inputIDs {
		hid, err := refSequence(ctx, w, inputIDs[b], attentionMask[b], tokenTypeIDs[b])
		if err != nil {
			return nil, err
		}
		switch cfg.Kind {
		case BiEncoder:
			out.LastHiddenState = append(out.LastHiddenState, hid)
		case CrossEncoder:
			H := cfg.Hidden
			pooled := linear(hid[0], w.PoolerW, w.PoolerB, H, H)
			for i := range pooled {
				pooled[i] = math.Tanh(pooled[i])
			}
			out.Logits = append(out.Logits, linear(pooled, w.ClsW, w.ClsB, H, 1)[0])
		}
	}
	return out, nil
}

func checkBatch(cfg Config, ids, mask, types [][]int64) error {
	if len(ids) == 0 || len(mask) != len(ids) || len(types) != len(ids) {
		return fmt.Errorf("%w: batch sizes %d/%d/%d", ErrBadInput, len(ids), len(mask), len(types))
	}
	s := len(ids[0])
	if s == 0 || s > cfg.MaxPositions {
		return fmt.Errorf("%w: sequence length %d (max %d)", ErrBadInput, s, cfg.MaxPositions)
	}
	for b := range ids {
		if len(ids[b]) != s || len(mask[b]) != s || len(types[b]) != s {
			return fmt.Errorf("%w: row %d is ragged", ErrBadInput, b)
		}
		for t := range s {
			if ids[b][t] < 0 || ids[b][t] >= int64(cfg.VocabSize) {
				return fmt.Errorf("%w: token id %d out of range", ErrBadInput, ids[b][t])
			}
			if mask[b][t] != 0 && mask[b][t] != 1 {
				return fmt.Errorf("%w: attention mask value %d (want 0 or 1)", ErrBadInput, mask[b][t])
			}
			if types[b][t] < 0 || types[b][t] >= int64(cfg.TypeVocab) {
				return fmt.Errorf("%w: token type %d out of range", ErrBadInput, types[b][t])
			}
		}
	}
	return nil
}

// refSequence returns the final hidden states [seq][hidden] of one sequence.
func refSequence(ctx context.Context, w *Weights, ids, mask, types []int64) ([][]float64, error) {
	cfg := w.Config
	S, H, I, NH, DH := len(ids), cfg.Hidden, cfg.Intermediate, cfg.Heads, cfg.HeadDim()
	x := make([][]float64, S)
	for t := range S {
		row := make([]float64, H)
		for j := range H {
			row[j] = float64(w.WordEmb[int(ids[t])*H+j]) + float64(w.TypeEmb[int(types[t])*H+j]) + float64(w.PosEmb[t*H+j])
		}
		x[t] = layerNormRef(row, w.EmbLNG, w.EmbLNB, cfg.LayerNormEps)
	}
	// Additive mask per key position; masked keys get weight exactly 0.
	// A row with every key masked gets uniform attention, which is what
	// score + finfo.min gives in float32 (all scores round to finfo.min).
	keep := make([]bool, S)
	anyKept := false
	for t := range S {
		keep[t] = mask[t] != 0
		anyKept = anyKept || keep[t]
	}
	if !anyKept {
		for t := range keep {
			keep[t] = true
		}
	}
	scale := 1 / math.Sqrt(float64(DH))
	for l := range w.Layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		L := &w.Layers[l]
		q := make([][]float64, S)
		k := make([][]float64, S)
		v := make([][]float64, S)
		for t := range S {
			q[t] = linear(x[t], L.QueryW, L.QueryB, H, H)
			k[t] = linear(x[t], L.KeyW, L.KeyB, H, H)
			v[t] = linear(x[t], L.ValueW, L.ValueB, H, H)
		}
		next := make([][]float64, S)
		probs := make([]float64, S)
		for t := range S {
			ctxv := make([]float64, H)
			for hd := range NH {
				off := hd * DH
				maxv := math.Inf(-1)
				for u := range S {
					if !keep[u] {
						probs[u] = math.Inf(-1)
						continue
					}
					var d float64
					for j := range DH {
						d += q[t][off+j] * k[u][off+j]
					}
					probs[u] = d * scale
					maxv = math.Max(maxv, probs[u])
				}
				var z float64
				for u := range S {
					if keep[u] {
						probs[u] = math.Exp(probs[u] - maxv)
						z += probs[u]
					} else {
						probs[u] = 0
					}
				}
				for u := range S {
					p := probs[u] / z
					if p == 0 {
						continue
					}
					for j := range DH {
						ctxv[off+j] += p * v[u][off+j]
					}
				}
			}
			ao := linear(ctxv, L.AttnOutW, L.AttnOutB, H, H)
			for j := range H {
				ao[j] += x[t][j]
			}
			x1 := layerNormRef(ao, L.AttnLNG, L.AttnLNB, cfg.LayerNormEps)
			ff := linear(x1, L.InterW, L.InterB, H, I)
			for j := range ff {
				ff[j] = 0.5 * ff[j] * (1 + math.Erf(ff[j]/math.Sqrt2))
			}
			o := linear(ff, L.OutW, L.OutB, I, H)
			for j := range H {
				o[j] += x1[j]
			}
			next[t] = layerNormRef(o, L.OutLNG, L.OutLNB, cfg.LayerNormEps)
		}
		x = next
	}
	return x, nil
}

// linear computes in · W + b for W stored [din, dout] row-major.
func linear(in []float64, w, b []float32, din, dout int) []float64 {
	out := make([]float64, dout)
	for j := range dout {
		out[j] = float64(b[j])
	}
	for i := range din {
		xi := in[i]
		row := w[i*dout : (i+1)*dout]
		for j := range dout {
			out[j] += xi * float64(row[j])
		}
	}
	return out
}

func layerNormRef(x []float64, gamma, beta []float32, eps float64) []float64 {
	var mean float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	var variance float64
	for _, v := range x {
		variance += (v - mean) * (v - mean)
	}
	variance /= float64(len(x))
	inv := 1 / math.Sqrt(variance+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = (v-mean)*inv*float64(gamma[i]) + float64(beta[i])
	}
	return out
}
