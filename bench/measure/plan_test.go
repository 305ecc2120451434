package measure

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestApprox(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {1400 * time.Millisecond, "1s"}, {59 * time.Second, "59s"},
		{90 * time.Second, "2 min"}, {59 * time.Minute, "59 min"},
		{65 * time.Minute, "1 h 05 min"}, {3*time.Hour + 20*time.Minute, "3 h 20 min"},
	} {
		if got := Approx(tt.d); got != tt.want {
			t.Errorf("Approx(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestPlan runs a three-step plan on a fake clock: the first step takes
// twice its estimate, so the remaining time doubles; a step without an
// estimate counts as free and does not move the scale.
func TestPlan(t *testing.T) {
	clock := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	var b bytes.Buffer
	p := NewPlan(&b, []PlanStep{
		{Name: "models", Estimate: time.Minute, Source: "built-in"},
		{Name: "lexical", Estimate: 10 * time.Minute, Source: "last run 2026-12-01"},
		{Name: "other"},
	}, now)
	if got := p.Total(); got != 11*time.Minute {
		t.Fatalf("Total = %v", got)
	}
	p.Print()
	for _, want := range []string{"plan: 3 steps, about 11 min in all", "1. models", "≈ 1 min (built-in)", "(last run 2026-12-01)", "3. other", "unknown"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	p.Begin(0)
	clock = clock.Add(2 * time.Minute)
	p.End(0, 2*time.Minute, nil)
	if got := p.Remaining(1); got != 20*time.Minute {
		t.Errorf("remaining after a step at twice its estimate = %v, want 20m", got)
	}
	if out := b.String(); !strings.Contains(out, "== [1/3] models\n") ||
		!strings.Contains(out, "== [1/3] models done in 2m0s (est. 1 min) · elapsed 2m0s · remaining ≈ 20 min") {
		t.Errorf("progress lines:\n%s", out)
	}
	b.Reset()
	p.End(2, 5*time.Second, errors.New("boom"))
	if out := b.String(); !strings.Contains(out, "other FAILED in 5s · elapsed 2m0s · remaining ≈ 0s") || !strings.Contains(out, "boom") {
		t.Errorf("failed step line:\n%s", out)
	}
	// The scale is bounded: a step 100× over its estimate counts as 4×.
	q := NewPlan(&b, []PlanStep{{Name: "a", Estimate: time.Second}, {Name: "b", Estimate: time.Minute}}, now)
	q.End(0, 100*time.Second, nil)
	if got := q.Remaining(1); got != 4*time.Minute {
		t.Errorf("bounded remaining = %v, want 4m", got)
	}
}
