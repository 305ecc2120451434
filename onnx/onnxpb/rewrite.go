package onnxpb

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrBadModel reports a serialized model that ReadGraphIO or RenameValues
// cannot read: broken protobuf, no graph, or (for renaming) subgraphs.
var ErrBadModel = errors.New("onnxpb: unreadable model")

// More field numbers from onnx/onnx.proto3, for reading.
const (
	fGraphSparseInitializer = 15
	fAttrG                  = 6
	fAttrGraphs             = 11
)

// GraphIO lists the top-level graph's input and output names of a
// serialized ModelProto, in declaration order. Inputs that are also
// initializers (as IR versions before 4 declare weights) are left out, so
// the inputs are what a caller feeds.
func GraphIO(model []byte) (inputs, outputs []string, err error) {
	graph, err := graphBytes(model)
	if err != nil {
		return nil, nil, err
	}
	inits := map[string]bool{}
	var declared []string
	err = eachRawField(graph, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == fGraphInitializer && typ == protowire.BytesType:
			name, err := stringField(v, fTensorName)
			inits[name] = true
			return err
		case num == fGraphInput && typ == protowire.BytesType:
			name, err := stringField(v, fValueInfoName)
			declared = append(declared, name)
			return err
		case num == fGraphOutput && typ == protowire.BytesType:
			name, err := stringField(v, fValueInfoName)
			outputs = append(outputs, name)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, n := range declared {
		if !inits[n] {
			inputs = append(inputs, n)
		}
	}
	return inputs, outputs, nil
}

// RenameValues returns a copy of a serialized ModelProto in which each
// value named by a key of renames (a graph input, or a node output such as
// a graph output) carries the mapped name instead, everywhere it occurs in
// the top-level graph: node inputs and outputs, graph inputs and outputs,
// value_info. Every other byte is copied unchanged. It is an error wrapping
// ErrBadModel when a name to rename does not exist or is an initializer's,
// a new name is already taken (or given to two values), or the graph has
// subgraphs (If, Loop), which it does not rewrite.
// Exports name outputs as they please ("output_0"); renaming lets a model
// present the names loaders look for ("last_hidden_state").
func RenameValues(model []byte, renames map[string]string) ([]byte, error) {
	graph, err := graphBytes(model)
	if err != nil {
		return nil, err
	}
	// Collect value names and refuse subgraphs before rewriting.
	names := map[string]bool{}
	inits := map[string]bool{} // initializers: their tensors keep their names
	err = eachRawField(graph, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case fGraphNode:
			return eachRawField(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
				switch {
				case num == fNodeOutput && typ == protowire.BytesType:
					names[string(v)] = true
				case num == fNodeAttribute && typ == protowire.BytesType:
					return eachRawField(v, func(num protowire.Number, _ protowire.Type, _ []byte) error {
						if num == fAttrG || num == fAttrGraphs {
							return fmt.Errorf("%w: the graph has subgraphs, which renaming does not rewrite", ErrBadModel)
						}
						return nil
					})
				}
				return nil
			})
		case fGraphInput, fGraphInitializer, fGraphSparseInitializer:
			field := protowire.Number(fValueInfoName)
			if num == fGraphInitializer {
				field = fTensorName
			}
			if num == fGraphSparseInitializer {
				return nil // its values tensor carries the name; none in our exports, and a clash is caught by the runtime
			}
			name, err := stringField(v, field)
			names[name] = true
			if num == fGraphInitializer {
				inits[name] = true
			}
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	from := make([]string, 0, len(renames))
	for k := range renames {
		from = append(from, k)
	}
	slices.Sort(from)
	claimed := map[string]string{} // new name -> the value taking it
	for _, k := range from {
		if !names[k] {
			return nil, fmt.Errorf("%w: no value named %q to rename", ErrBadModel, k)
		}
		if inits[k] {
			return nil, fmt.Errorf("%w: %q is an initializer; renaming takes graph inputs and node outputs", ErrBadModel, k)
		}
		to := renames[k]
		if _, movesAway := renames[to]; to == "" || (names[to] && !movesAway) {
			return nil, fmt.Errorf("%w: cannot rename %q to %q: name empty or taken", ErrBadModel, k, to)
		}
		if other, dup := claimed[to]; dup {
			return nil, fmt.Errorf("%w: cannot rename both %q and %q to %q", ErrBadModel, other, k, to)
		}
		claimed[to] = k
	}
	rename := func(s string) string {
		if to, ok := renames[s]; ok {
			return to
		}
		return s
	}
	newGraph, err := rewrite(graph, func(num protowire.Number, v []byte) ([]byte, bool, error) {
		switch num {
		case fGraphNode:
			b, err := rewrite(v, func(num protowire.Number, v []byte) ([]byte, bool, error) {
				if num == fNodeInput || num == fNodeOutput {
					return []byte(rename(string(v))), true, nil
				}
				return nil, false, nil
			})
			return b, true, err
		case fGraphInput, fGraphOutput, fGraphValueInfo:
			b, err := rewrite(v, func(num protowire.Number, v []byte) ([]byte, bool, error) {
				if num == fValueInfoName {
					return []byte(rename(string(v))), true, nil
				}
				return nil, false, nil
			})
			return b, true, err
		}
		return nil, false, nil
	})
	if err != nil {
		return nil, err
	}
	return rewrite(model, func(num protowire.Number, v []byte) ([]byte, bool, error) {
		if num == fModelGraph {
			return newGraph, true, nil
		}
		return nil, false, nil
	})
}

// graphBytes returns the GraphProto of a serialized ModelProto.
func graphBytes(model []byte) ([]byte, error) {
	var graph []byte
	err := eachRawField(model, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num == fModelGraph && typ == protowire.BytesType {
			graph = v
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if graph == nil {
		return nil, fmt.Errorf("%w: no graph", ErrBadModel)
	}
	return graph, nil
}

// eachRawField calls fn for every field of a serialized message (the
// reader's eachField); v is the payload of length-delimited fields and nil
// for the others. Broken bytes are ErrBadModel, as this file's API reports.
func eachRawField(msg []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	err := eachField(msg, func(f field) error {
		var v []byte
		if f.typ == protowire.BytesType {
			v = f.b
		}
		return fn(f.num, f.typ, v)
	})
	if errors.Is(err, ErrMalformed) {
		return fmt.Errorf("%w: %w", ErrBadModel, err)
	}
	return err
}

// stringField returns the last value of a string field of msg ("" if none).
func stringField(msg []byte, field protowire.Number) (string, error) {
	var s string
	err := eachRawField(msg, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num == field && typ == protowire.BytesType {
			s = string(v)
		}
		return nil
	})
	return s, err
}

// rewrite copies msg field by field; for a length-delimited field, fn may
// return a replacement payload (replace true).
func rewrite(msg []byte, fn func(num protowire.Number, v []byte) (payload []byte, replace bool, err error)) ([]byte, error) {
	out := make([]byte, 0, len(msg))
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, fmt.Errorf("%w: %v", ErrBadModel, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, msg[n:])
		if m < 0 {
			return nil, fmt.Errorf("%w: field %d: %v", ErrBadModel, num, protowire.ParseError(m))
		}
		if typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(msg[n:])
			payload, replace, err := fn(num, v)
			if err != nil {
				return nil, err
			}
			if replace {
				out = protowire.AppendTag(out, num, typ)
				out = protowire.AppendBytes(out, payload)
				msg = msg[n+m:]
				continue
			}
		}
		out = append(out, msg[:n+m]...)
		msg = msg[n+m:]
	}
	return out, nil
}
