package ops

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// cSources are the C files that implement the operators, relative to
// this package, each with the operator it defines.
var cSources = map[string]string{"../hybrank_ops.c": Attention, "../hybrank_qmatmul.c": QuantMatMul}

var (
	getAttr = regexp.MustCompile(`KernelInfoGetAttribute(_int64|_float|Array_int64)\(info, "([a-z_0-9]+)"`)
	opName  = regexp.MustCompile(`return "([A-Za-z]+)";`)
	cTypes  = map[string]Type{"_int64": Int, "_float": Float, "Array_int64": Ints}
)

// TestCKernelsFollowTable reads each kernel's attribute reads from the C
// source: their names, types (the KernelInfoGetAttribute variant) and
// whether a missing one is tolerated (its status released), and compares
// them with Table.
func TestCKernelsFollowTable(t *testing.T) {
	ops := map[string]Op{}
	for _, op := range Table {
		ops[op.Name] = op
	}
	for path, name := range cSources {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(src)
		if !slices.ContainsFunc(opName.FindAllStringSubmatch(s, -1), func(m []string) bool { return m[1] == name }) {
			t.Errorf("%s: no kernel named %q", path, name)
		}
		if strings.Contains(path, "hybrank_ops.c") && !strings.Contains(s, `CreateCustomOpDomain("`+Domain+`"`) {
			t.Errorf("%s: the domain is not %q", path, Domain)
		}
		got := map[string]Attribute{}
		idx := getAttr.FindAllStringSubmatchIndex(s, -1)
		for i, m := range idx {
			a := Attribute{Name: s[m[4]:m[5]], Type: cTypes[s[m[2]:m[3]]]}
			end := len(s)
			if i+1 < len(idx) {
				end = idx[i+1][0]
			}
			// A read whose failure is tolerated releases its status
			// before the next read.
			a.Optional = strings.Contains(s[m[1]:min(end, m[1]+600)], "ReleaseStatus(st)")
			if prev, ok := got[a.Name]; ok {
				a.Optional = a.Optional || prev.Optional // split: its length first (optional), then its values
			}
			got[a.Name] = a
		}
		want := ops[name].Attributes
		for _, w := range want {
			if g, ok := got[w.Name]; !ok {
				t.Errorf("%s: %s reads no attribute %q", path, name, w.Name)
			} else if g != w {
				t.Errorf("%s: %s reads %+v, the table says %+v", path, name, g, w)
			}
		}
		for n := range got {
			if !slices.ContainsFunc(want, func(w Attribute) bool { return w.Name == n }) {
				t.Errorf("%s: %s reads %q, which the table does not name", path, name, n)
			}
		}
	}
}
