package onnx_test

import (
	"context"
	"fmt"
	"log"

	"github.com/hybrank/hybrank/onnx"
)

// Running a Hugging Face cross-encoder export. (Not run as a test: it needs
// the runtime library and a model directory.)
func Example() {
	if err := onnx.Init(onnx.RuntimeConfig{}); err != nil { // $HYBRANK_ORT_LIB or .deps/ort
		log.Fatal(err)
	}
	cfg := onnx.DefaultSessionConfig() // provider auto: CUDA if available, else CPU
	s, err := onnx.NewSession("model/onnx/model.onnx",
		[]string{"input_ids", "attention_mask", "token_type_ids"}, []string{"logits"}, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	shape := []int64{1, 4} // [batch_size, sequence_length]
	out, err := s.Run(context.Background(), []onnx.Input{
		{Name: "input_ids", Shape: shape, Int64: []int64{101, 7592, 2088, 102}},
		{Name: "attention_mask", Shape: shape, Int64: []int64{1, 1, 1, 1}},
		{Name: "token_type_ids", Shape: shape, Int64: []int64{0, 0, 0, 0}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Provider(), out[0].Shape, out[0].Float32)
}
