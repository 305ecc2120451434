package onnx

import "errors"

// Errors returned by this package; match them with errors.Is.
var (
	// ErrNotInitialized: NewSession or ModelIO was called before Init.
	ErrNotInitialized = errors.New("onnx: runtime not initialised (call onnx.Init first)")

	// ErrLibrary: the ONNX Runtime library is missing, cannot be loaded, does
	// not match the API version onnxruntime_go was built for, or Init was
	// called again with a different path. The message names the fix.
	ErrLibrary = errors.New("onnx: ONNX Runtime library unavailable")

	// ErrProviderUnavailable: Provider "cuda" was requested and the CUDA
	// execution provider could not be started.
	ErrProviderUnavailable = errors.New("onnx: execution provider unavailable")

	// ErrClosed: the Session was closed.
	ErrClosed = errors.New("onnx: session closed")

	// ErrBadInput: an input's name, type, shape or data length does not
	// match the model.
	ErrBadInput = errors.New("onnx: bad input")

	// ErrBadConfig: SessionConfig.Validate failed.
	ErrBadConfig = errors.New("onnx: bad session config")

	// ErrModel: the model file could not be loaded, or its inputs/outputs do
	// not match the names given to NewSession, or an output is not float32.
	ErrModel = errors.New("onnx: bad model")
)
