package rerank

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/throughput"
	"github.com/hybrank/hybrank/models"
)

// Report renders res as bench/results/rerank.md: one table in which each
// real-pair row of hybrank is followed by the peer's rows of its profile,
// then the synthetic rows; rerank.svg plots the synthetic rows.
func Report(cfg Config, res Result, command string) report.Report {
	var real, synthetic []throughput.Row
	for _, r := range res.Rows {
		if r.LenMax > 0 {
			real = append(real, r)
		} else {
			synthetic = append(synthetic, r)
		}
	}
	rep := throughput.Report("rerank", cfg.Config, throughput.Result{Rows: synthetic}, command)
	rep.Config = cfg
	rep.Checks = res.Checks
	rep.Columns = report.Columns(throughput.Row{}, PeerRow{})
	rep.Rows = nil
	// The peer's rows follow the first (default, float32) row of their
	// profile; the batching and int8 rows of that profile come after them.
	withPeers := map[string]bool{}
	for _, r := range real {
		rep.Rows = append(rep.Rows, r)
		if withPeers[r.Profile+"\x00"+r.Data] {
			continue
		}
		withPeers[r.Profile+"\x00"+r.Data] = true
		for _, p := range res.Peers {
			if p.Profile == r.Profile && p.Data == r.Data {
				rep.Rows = append(rep.Rows, p)
			}
		}
	}
	rep.Rows = append(rep.Rows, report.Rows(synthetic)...)
	if len(synthetic) == 0 {
		rep.Figures = nil
	}
	if len(real) > 0 {
		r := real[0]
		rep.Notes = append(rep.Notes, fmt.Sprintf("Real pairs (%s): each query against its own BM25 candidates (bench/lexical TopK), one Score call per query, documents whole "+
			"(title + \" \" + text) up to the model's maximum length (at most 512 tokens); sequence lengths as hybrank feeds them, specials included: p10 %d, p50 %d, p90 %d, max %d (mean %.1f). "+
			"These rows come first; the synthetic shapes (doc_tokens set) follow.", r.Data, r.LenP10, r.LenP50, r.LenP90, r.LenMax, r.SeqLen))
	}
	if slices.ContainsFunc(rep.Rows, func(r any) bool { x, ok := r.(throughput.Row); return ok && x.Fusion != "" }) {
		rep.Notes = append(rep.Notes, "fusion: what onnx/fuse did to the graph hybrank's sessions run: on the CPU each residual Add and the layer normalisation after it "+
			"(and the bias Add before it) as one com.microsoft SkipLayerNormalization, which ONNX Runtime's own optimiser skips for a dynamic sequence length; "+
			"on the CPU and CUDA \"first token\": the last layer computed for [CLS] only past its keys and values (all the head reads; gflops counts that work); "+
			"\"attention bf16\" (int8 graphs on a CPU with AMX-BF16): each layer's self-attention as hybrank's own ai.hybrank.Attention kernel, both products in bfloat16 on AMX tiles, softmax in float32 (float32 graphs keep float32 attention); "+
			"\"off\" with --no-fusion, \"none\" where nothing applied. The peer runs the file as it is.")
	}
	if len(res.Quant) > 0 && res.Quant[0].Type == models.QuantizeFP16 {
		rep.Notes = append(rep.Notes, "quantize=fp16 rows: the same profile's model converted to float16 by onnx/quantize (every float32 initializer rounded to nearest even, the attention-mask constant clamped to −65504, "+
			"float32 inputs and outputs kept with a Cast at each edge), loaded through models.Config.Quantize, measured right after the float32 row on the same pairs and settings. "+
			"The checks compare pairs/s (reported) and the per-query Spearman correlation of the two models' scores over each query's candidate list.")
	}
	if len(res.Quant) > 0 && res.Quant[0].Type == models.QuantizeInt8 {
		rep.Notes = append(rep.Notes, "quantize=int8 rows: the same profile's model quantized by onnx/quantize as models.Config.Quantize makes it (per-output-channel symmetric weights, 8-bit where the CPU's integer kernels sum in 32 bits (VNNI, AMX), else 7-bit, in com.microsoft DynamicQuantizeMatMul; "+
			"classifier and pooler kept in float32; with --int8-activation-bits 8 each quantized activation smoothed (SmoothQuant, alpha 0.75: channel j divided by s_j = amax_j^0.75 / wmax_j^0.25, the weight rows multiplied by it, amax measured on hybrank's built-in calibration pairs)), loaded through models.Config.Quantize, measured right after the float32 row on the same pairs and settings. "+
			"On a CPU with AMX-INT8 the products run as hybrank's ai.hybrank.QuantMatMul, activations quantized per token (\"per-token int8 MatMul\" in the fusion column), in 16-bit codes run as two integer products on their bytes (8-bit with --int8-activation-bits 8), a layer's Q, K and V as one product; --int8-per-tensor keeps the runtime's kernel, one scale for the whole batch; with AMX-BF16 each layer's attention runs in bfloat16 (\"attention bf16\"; a narrowed last layer's one query row in float32). "+
			"The checks compare pairs/s and the per-query Spearman correlation of the two models' scores over each query's candidate list. The CPU flags in the header decide which integer kernels ONNX Runtime runs (AVX512-VNNI/AVX-VNNI/AMX when present, else AVX2 vpmaddubsw).")
	}
	if slices.ContainsFunc(res.Quant, func(q QuantRow) bool { return q.Weights == modeldir.WeightsRandomHead }) {
		rep.Notes = append(rep.Notes, "Rows named after a model directory rather than a profile (e.g. all-minilm-l6-v2-xe) are a trained encoder under a seeded random head "+
			"(bench models --import-safetensors --random-head; make models imports all-MiniLM-L6-v2's checkpoint, the balanced profile's shape): "+
			"its activations have a trained model's ranges and outliers and its score moves with the text, so its Spearman line measures the quantized arithmetic on real activations; the score ranks nothing (no relevance head was trained).")
	}
	if i := slices.IndexFunc(res.Peers, func(p PeerRow) bool { return p.DType != "" }); i >= 0 {
		p := res.Peers[i]
		rep.Notes = append(rep.Notes, "impl=torch: PyTorch "+p.Version+" (the machine's own) with transformers' BertForSequenceClassification, scaled-dot-product attention, "+
			"the model in "+p.DType+" on "+p.Provider+", loaded with the weights of the same ONNX file (bench/peers/torch_rerank.py), Hugging Face tokenizers, "+
			"fixed batches padded to their longest as sentence-transformers' CrossEncoder runs on a GPU, tokenization inside the timing; run right after hybrank's row of that profile. "+
			"max |Δ| is reported, not checked, where the peer computes in reduced precision.")
	}
	if i := slices.IndexFunc(res.Peers, func(p PeerRow) bool { return p.DType == "" }); i >= 0 {
		rep.Notes = append(rep.Notes, "impl=onnxruntime-python: ONNX Runtime "+res.Peers[i].Version+" (Python, make peers) with Hugging Face tokenizers on the same model directory's ONNX file and the same real pairs, "+
			"the way sentence-transformers' ONNX backend runs a CrossEncoder: pairs in input order, fixed batches padded to their longest, longest_first truncation, the same intra-op threads, tokenization inside the timing. "+
			"Run right after hybrank's row of that profile. hybrank × = hybrank pairs/s (its default batching) / the peer's, same run; max |Δ| = max |hybrank − peer| score over the pairs "+
			"(hybrank cuts the query to half the budget, then only the document: the same tokens as longest_first for real queries); "+
			"read it against score_range in the JSON (hybrank's max − min score): generated weights put every logit close together, so only a difference far below that range shows the two compute the same, and the check's bound is the least of max_score_diff and max_score_diff_of_range × that range. "+
			"A peer row whose hybrank row ran other work (int8 weights against the file's float32, another device, several sessions) has its checks as INFO lines saying so.")
	}
	return rep
}

// ReadResult reads the JSON lines printed by `bench rerank --json`:
// hybrank's rows and the peer's (told apart by impl), with t's checks (the
// peer's and the efficiency's) recomputed, for re-rendering a report
// without re-running it. The batching and int8 checks are not: they need
// the run's batching settings and the scores, which the lines do not hold.
func ReadResult(path string, t Targets) (Result, error) {
	var res Result
	b, err := os.ReadFile(path)
	if err != nil {
		return res, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	for n := 1; ; n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			break
		} else if err != nil {
			return res, fmt.Errorf("%s: result %d: %w", path, n, err)
		}
		var who struct {
			Impl string `json:"impl"`
		}
		if err := json.Unmarshal(raw, &who); err != nil {
			return res, fmt.Errorf("%s: result %d: %w", path, n, err)
		}
		if who.Impl == "" || who.Impl == "hybrank" {
			var r throughput.Row
			if err := json.Unmarshal(raw, &r); err != nil {
				return res, fmt.Errorf("%s: result %d: %w", path, n, err)
			}
			res.Rows = append(res.Rows, r)
			continue
		}
		var p PeerRow
		if err := json.Unmarshal(raw, &p); err != nil {
			return res, fmt.Errorf("%s: result %d: %w", path, n, err)
		}
		res.Peers = append(res.Peers, p)
	}
	res.Checks = t.checkAll(res.Rows, res.Peers)
	return res, nil
}
