package safetensors_test

import (
	"fmt"
	"log"

	"github.com/hybrank/hybrank/models/safetensors"
)

// Reading every tensor of a checkpoint as float32, whatever its float dtype.
func ExampleOpen() {
	f, err := safetensors.Open("model.safetensors")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	for _, name := range f.Names() {
		info, _ := f.Info(name)
		if info.DType != safetensors.F32 && info.DType != safetensors.F16 && info.DType != safetensors.BF16 {
			continue // buffers such as position_ids
		}
		v, _, err := f.Float32(name)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(name, info.DType, info.Shape, len(v))
	}
}
