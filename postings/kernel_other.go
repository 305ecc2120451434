//go:build !amd64 || purego

package postings

// hasAVX512 is false off amd64: the Go kernel scores every posting.
var hasAVX512 = false

// addTabledVec adds nothing off amd64 (see kernel_amd64.go).
func addTabledVec(acc []float32, docs []uint32, tf []uint8, docLen []uint32, tab []float64, idf, nonOcc float64, w float32) int {
	return 0
}

// groupMaxima is not used off amd64 (hasAVX512 is false).
func groupMaxima(acc []float32, maxima []uint32) []uint32 { panic("postings: no vector kernel") }

// gatherVec is not used off amd64 (hasAVX512 is false).
func gatherVec(sel []scored, acc []float32, t int32, vals, docs []uint32) ([]scored, []uint32, []uint32) {
	panic("postings: no vector kernel")
}
