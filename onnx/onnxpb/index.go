package onnxpb

// Index says, for each value of a graph, where it is defined and where it
// is read: what a rewriter needs to match node patterns. It describes the
// graph as it was when built; a rewriter that changes the graph builds a
// new one.
type Index struct {
	// Initializers maps names to the tensors in Graph.Initializers.
	Initializers map[string]*Tensor
	// Inputs and Outputs hold the graph's input and output names.
	Inputs, Outputs map[string]bool
	// Producer maps each node output to the index of its node.
	Producer map[string]int
	// Consumers maps each value to the indices of the nodes reading it,
	// in graph order (a node reading it twice is listed twice).
	Consumers map[string][]int
}

// Index builds g's Index.
func (g *Graph) Index() *Index {
	x := &Index{
		Initializers: make(map[string]*Tensor, len(g.Initializers)),
		Inputs:       make(map[string]bool, len(g.Inputs)),
		Outputs:      make(map[string]bool, len(g.Outputs)),
		Producer:     make(map[string]int, len(g.Nodes)),
		Consumers:    make(map[string][]int, len(g.Nodes)),
	}
	for i := range g.Initializers {
		x.Initializers[g.Initializers[i].Name] = &g.Initializers[i]
	}
	for _, v := range g.Inputs {
		x.Inputs[v.Name] = true
	}
	for _, v := range g.Outputs {
		x.Outputs[v.Name] = true
	}
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in != "" { // "": an optional input left out, no value
				x.Consumers[in] = append(x.Consumers[in], i)
			}
		}
		for _, out := range n.Outputs {
			if out != "" {
				x.Producer[out] = i
			}
		}
	}
	return x
}

// Constant returns the initializer called name, or nil when there is none
// or a graph input of the same name can override it at run time.
func (x *Index) Constant(name string) *Tensor {
	if x.Inputs[name] {
		return nil
	}
	return x.Initializers[name]
}
