package main

import (
	"slices"
	"testing"
	"time"
)

func TestDurationsFlag(t *testing.T) {
	var got durationsFlag
	for _, v := range []string{"25ms", "0.5s", "40"} {
		if err := got.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 3 || got[0] != 25*time.Millisecond || got[1] != 500*time.Millisecond || got[2] != 40*time.Millisecond {
		t.Fatalf("%v", got)
	}
	for _, bad := range []string{"x", "0ms", "-5ms"} {
		var d durationsFlag
		if err := d.Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestListFlags(t *testing.T) {
	var l listFlag
	_ = l.Set("a, b,,c")
	_ = l.Set("d")
	if !slices.Equal(l, listFlag{"a", "b", "c", "d"}) {
		t.Errorf("list %v", l)
	}
	n := intsFlag{8, 16}
	if err := n.Set("1,4, 16"); err != nil || !slices.Equal(n, intsFlag{1, 4, 16}) || n.String() != "1,4,16" {
		t.Errorf("ints %v %v", n, err)
	}
	if err := n.Set("1,0"); err == nil {
		t.Error("0 accepted")
	}
	var r repeated
	_ = r.Set("quiet box, no other jobs")
	if len(r) != 1 {
		t.Errorf("note split: %v", r)
	}
}
