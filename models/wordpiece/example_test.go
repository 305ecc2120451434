package wordpiece_test

import (
	"fmt"
	"strings"

	"github.com/hybrank/hybrank/models/wordpiece"
)

func Example() {
	vocab := "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nun\n##aff\n##able\ncafe\n,\n"
	tk, err := wordpiece.NewFromVocab(strings.NewReader(vocab), wordpiece.DefaultConfig())
	if err != nil {
		panic(err)
	}
	fmt.Println(tk.Tokens("The unaffable Café, unknownword"))

	e, err := tk.EncodePair("the cafe", "unaffable", 512, wordpiece.LongestFirst)
	if err != nil {
		panic(err)
	}
	fmt.Println(e.IDs, e.TypeIDs)

	ids, types, mask, seqLen := tk.PadBatch([]wordpiece.Encoding{e}, nil, nil, nil)
	fmt.Println(len(ids), len(types), len(mask), seqLen)
	// Output:
	// [the un ##aff ##able cafe , [UNK]]
	// [2 5 9 3 6 7 8 3] [0 0 0 0 1 1 1 1]
	// 8 8 8 8
}
