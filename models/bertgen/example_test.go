package bertgen_test

import (
	"fmt"
	"log"

	"github.com/hybrank/hybrank/models/bertgen"
)

// Writing a MiniLM-L6 cross-encoder with random weights in the layout of a
// Hugging Face ONNX export.
func ExampleWrite() {
	cfg := bertgen.MiniLML6CrossEncoder()
	cfg.Seed = 7
	err := bertgen.Write("testdata/minilm-l6", cfg,
		".deps/assets/bert-base-uncased-vocab.txt", ".deps/assets/all-minilm-l6-v2-tokenizer.json")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.1f GFLOP per 128-token pair\n", bertgen.FLOPs(cfg, 128)/1e9)
}
