// Package safetensors reads and writes the safetensors tensor file format
// (Hugging Face's replacement for pickled PyTorch checkpoints, which most
// model repositories now ship as model.safetensors), in pure Go.
//
// # Format
//
// A file is an 8-byte little-endian unsigned header length N, N bytes of
// UTF-8 JSON, then the data buffer. The JSON object maps each tensor name to
// {"dtype": "F32", "shape": [30522, 384], "data_offsets": [begin, end]},
// offsets relative to the start of the data buffer; the optional key
// "__metadata__" maps strings to strings. Tensors are stored row-major,
// little-endian. Open enforces the format's own rules, so a damaged or
// hostile file is an error wrapping ErrFormat, never a panic: the header
// fits the file and is at most MaxHeaderSize, starts with '{' and is valid
// JSON; every shape is non-negative and its element count times the dtype
// size equals end − begin; and the tensors tile the data buffer exactly (no
// hole, no overlap, nothing past its end).
//
// # Conversion
//
// Float32 converts F32, F16, BF16 and F64 tensors to float32 (F16 and BF16
// exactly; F64 rounds to nearest). Int64 converts the integer dtypes. Any
// other dtype for either is an error wrapping ErrDType.
//
// # Concurrency and ownership
//
// A File is safe for concurrent use: reads go through io.ReaderAt. Close is
// idempotent and waits for reads in flight; reads after Close return
// ErrClosed. Slices returned by Float32, Int64 and Raw are freshly allocated
// and belong to the caller. Write does not retain its arguments.
package safetensors
