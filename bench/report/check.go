package report

import (
	"fmt"
	"strconv"
)

// Verdicts of a Check.
const (
	Pass = "PASS"
	Fail = "FAIL"
	Info = "INFO" // a figure worth reading next to the targets, with no target
)

// Check is one target of a benchmark compared with what it measured: a
// PASS/FAIL line of a report. Build one with AtLeast, AtMost or Inform so
// the verdict always agrees with the numbers.
type Check struct {
	// Name says what was measured ("batching on / off, pairs/s").
	Name    string  `json:"check"`
	Verdict string  `json:"verdict"`
	Value   float64 `json:"value"`
	// Op is ">=" or "<=" (Value Op Target passes); "" for Info.
	Op     string  `json:"op,omitempty"`
	Target float64 `json:"target,omitempty"`
	// Detail gives the figures behind Value.
	Detail string `json:"detail,omitempty"`
}

// AtLeast passes when value ≥ min.
func AtLeast(name string, value, min float64, detail string) Check {
	return Check{Name: name, Verdict: verdict(value >= min), Value: value, Op: ">=", Target: min, Detail: detail}
}

// AtMost passes when value ≤ max.
func AtMost(name string, value, max float64, detail string) Check {
	return Check{Name: name, Verdict: verdict(value <= max), Value: value, Op: "<=", Target: max, Detail: detail}
}

// Inform records a figure without a target (verdict INFO).
func Inform(name string, value float64, detail string) Check {
	return Check{Name: name, Verdict: Info, Value: value, Detail: detail}
}

func verdict(ok bool) string {
	if ok {
		return Pass
	}
	return Fail
}

// Passed reports whether c did not fail (INFO passes).
func (c Check) Passed() bool { return c.Verdict != Fail }

// String is the report line: "PASS name: 0.91 >= 2 (detail)".
func (c Check) String() string {
	v, t := c.figures()
	s := c.Verdict + " " + c.Name + ": " + v
	if c.Op != "" {
		s += " " + c.Op + " " + t
	}
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	return s
}

func num(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// figures prints value and target with four digits, or with all of them
// where four would print them alike ("2.5 >= 2.5" for a FAIL).
func (c Check) figures() (value, target string) {
	v, t := num(c.Value), num(c.Target)
	if c.Op != "" && v == t && c.Value != c.Target {
		v, t = strconv.FormatFloat(c.Value, 'g', -1, 64), strconv.FormatFloat(c.Target, 'g', -1, 64)
	}
	return v, t
}

// Failed returns the checks that failed, in order.
func Failed(cs []Check) []Check {
	var out []Check
	for _, c := range cs {
		if !c.Passed() {
			out = append(out, c)
		}
	}
	return out
}

// Verdict summarises checks: "PASS", or "FAIL: " and the failed lines.
func Verdict(cs []Check) string {
	failed := Failed(cs)
	if len(failed) == 0 {
		return Pass
	}
	s := Fail + ":"
	for i, c := range failed {
		if i > 0 {
			s += ";"
		}
		v, t := c.figures()
		s += fmt.Sprintf(" %s %s %s %s", c.Name, v, opposite(c.Op), t)
	}
	return s
}

// opposite is the relation a failed check's value has to its target.
func opposite(op string) string {
	if op == ">=" {
		return "<"
	}
	return ">"
}
