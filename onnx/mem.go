package onnx

import (
	"fmt"
	"os"
)

// ResidentBytes returns the process's resident set size in bytes, read from
// /proc/self/statm (0 where that file does not exist). Leak tests and
// benchmarks use it: ONNX Runtime's memory is invisible to runtime.MemStats.
func ResidentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, rss int64
	if _, err := fmt.Sscan(string(b), &size, &rss); err != nil {
		return 0
	}
	return rss * int64(os.Getpagesize())
}
