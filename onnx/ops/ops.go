package ops

// Domain is the operator-set domain of hybrank's operators, for nodes and
// the model's opset imports; the operators are version 1.
const Domain = "ai.hybrank"

// Operator names.
const (
	// Attention is a BERT layer's self-attention after its Q, K and V
	// projections: softmax(Q·Kᵀ·scale + mask)·V per head.
	Attention = "Attention"
	// QuantMatMul is com.microsoft DynamicQuantizeMatMul with one
	// activation scale per token (a row of A), optionally GELU after and
	// several outputs split along the columns.
	QuantMatMul = "QuantMatMul"
)

// Attribute names.
const (
	NumHeads = "num_heads" // Attention: heads (int)
	Scale    = "scale"     // Attention: the factor of Q·Kᵀ (float)
	BF16     = "bf16"      // Attention: 1 runs both products in bfloat16 on AMX tiles (int, default 0)
	AMX      = "amx"       // QuantMatMul: 1 runs the integer products on AMX-INT8 tiles (int, default 0)
	GELU     = "gelu"      // QuantMatMul: 1 applies GELU (erf) to the output (int, default 0)
	ABits    = "a_bits"    // QuantMatMul: activation code width, 8 or 16 (int, default 8)
	Split    = "split"     // QuantMatMul: the outputs' column counts (ints, default one output)
)

// Type is an attribute's ONNX type.
type Type string

// Attribute types.
const (
	Int   Type = "int"
	Float Type = "float"
	Ints  Type = "ints"
)

// Attribute is one attribute of an operator.
type Attribute struct {
	Name     string
	Type     Type
	Optional bool // a node may leave it out
}

// Op is one operator and its attributes.
type Op struct {
	Name       string
	Attributes []Attribute
}

// Table lists every operator of Domain with its attributes.
var Table = []Op{
	{Name: Attention, Attributes: []Attribute{
		{Name: NumHeads, Type: Int}, {Name: Scale, Type: Float}, {Name: BF16, Type: Int, Optional: true},
	}},
	{Name: QuantMatMul, Attributes: []Attribute{
		{Name: AMX, Type: Int, Optional: true}, {Name: GELU, Type: Int, Optional: true},
		{Name: ABits, Type: Int, Optional: true}, {Name: Split, Type: Ints, Optional: true},
	}},
}
