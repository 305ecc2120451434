package models

import "errors"

// Errors returned by this package. Callers test them with errors.Is; the
// returned errors wrap them with what was being done.
var (
	// ErrInvalidConfig reports a Config that fails Validate.
	ErrInvalidConfig = errors.New("models: invalid config")
	// ErrUnknownProfile reports a profile name that is not fast, balanced,
	// accurate or embed.
	ErrUnknownProfile = errors.New("models: unknown profile")
	// ErrModelDir reports a model directory that is missing, incomplete or
	// unreadable (no config.json, no tokenizer, no ONNX file).
	ErrModelDir = errors.New("models: bad model directory")
	// ErrUnsupportedModel reports an ONNX model whose inputs or outputs do
	// not match what a BERT cross-encoder or bi-encoder exports.
	ErrUnsupportedModel = errors.New("models: unsupported model")
	// ErrEmptyQuery reports a rerank call with an empty (or all-space) query.
	ErrEmptyQuery = errors.New("models: empty query")
	// ErrTooManyDocs reports a call with more documents (or pairs) than
	// Config.MaxDocs; raise MaxDocs to score more in one call.
	ErrTooManyDocs = errors.New("models: too many documents")
	// ErrNoChunking reports a chunked call (ScoreSpans, EmbedSpans) on
	// a wrapper whose model does not score long documents in windows.
	ErrNoChunking = errors.New("models: the model does not score long documents in windows")
	// ErrClosed reports a call on a model after Close.
	ErrClosed = errors.New("models: model closed")
)
