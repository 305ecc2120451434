package bertgen_test

import (
	"context"
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

// Importing a Hugging Face BERT checkpoint (config.json, model.safetensors,
// tokenizer files) into the ONNX layout, with its real weights.
func ExampleImport() {
	info, err := bertgen.Import(context.Background(), "checkpoints/all-MiniLM-L6-v2", "models/all-minilm-l6-v2")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.Config.Kind, info.Params, "parameters from", bertgen.SafetensorsFile, info.SafetensorsSHA256)
}
