package measure

import (
	"fmt"
	"io"
	"time"
)

// PlanStep is one step of a long job (bench all): what it is called and
// how long it is expected to take.
type PlanStep struct {
	Name string
	// Estimate is the step's expected wall time; 0 means unknown (the
	// step counts as free in the remaining time).
	Estimate time.Duration
	// Source says where Estimate came from, e.g. "last run 2026-12-02" or
	// "built-in".
	Source string
}

// Plan prints a job's plan before it starts and one progress line per
// step as it runs: the step's time, the job's elapsed time and an estimate
// of what remains. The remaining time is the remaining steps' estimates
// scaled by how the finished steps compared with theirs (a machine twice
// as slow as the estimates' doubles it), the scale kept within [1/4, 4] so
// that one odd step cannot swing it wildly.
//
// A Plan is used from one goroutine.
type Plan struct {
	w     io.Writer
	steps []PlanStep
	now   func() time.Time
	start time.Time
	// Sums over the finished steps that had an estimate.
	spentEst, spentActual time.Duration
	finished              int
}

// NewPlan returns the plan of steps, written to w, timed by now (time.Now
// when nil). The clock starts at NewPlan.
func NewPlan(w io.Writer, steps []PlanStep, now func() time.Time) *Plan {
	if now == nil {
		now = time.Now
	}
	return &Plan{w: w, steps: steps, now: now, start: now()}
}

// Total is the sum of the steps' estimates.
func (p *Plan) Total() time.Duration {
	var t time.Duration
	for _, s := range p.steps {
		t += s.Estimate
	}
	return t
}

// Print writes the plan: one line per step with its estimate and source,
// then the total.
func (p *Plan) Print() {
	fmt.Fprintf(p.w, "plan: %d steps, about %s in all\n", len(p.steps), Approx(p.Total()))
	for i, s := range p.steps {
		est := "unknown"
		if s.Estimate > 0 {
			est = "≈ " + Approx(s.Estimate)
			if s.Source != "" {
				est += " (" + s.Source + ")"
			}
		}
		fmt.Fprintf(p.w, "  %2d. %-64s %s\n", i+1, s.Name, est)
	}
}

// Begin writes the line that starts step i (0-based).
func (p *Plan) Begin(i int) {
	fmt.Fprintf(p.w, "== [%d/%d] %s\n", i+1, len(p.steps), p.steps[i].Name)
}

// End records that step i took took (failed when err is not nil) and
// writes its progress line: the step's time against its estimate, the
// job's elapsed time and the estimated time left.
func (p *Plan) End(i int, took time.Duration, err error) {
	s := p.steps[i]
	p.finished++
	if s.Estimate > 0 {
		p.spentEst += s.Estimate
		p.spentActual += took
	}
	outcome := "done"
	if err != nil {
		outcome = "FAILED"
	}
	est := ""
	if s.Estimate > 0 {
		est = " (est. " + Approx(s.Estimate) + ")"
	}
	fmt.Fprintf(p.w, "== [%d/%d] %s %s in %s%s · elapsed %s · remaining ≈ %s\n",
		i+1, len(p.steps), s.Name, outcome, took.Round(time.Second), est,
		p.now().Sub(p.start).Round(time.Second), Approx(p.Remaining(i+1)))
	if err != nil {
		fmt.Fprintf(p.w, "   %v\n", err)
	}
}

// Remaining estimates the time the steps from next on will take.
func (p *Plan) Remaining(next int) time.Duration {
	var left time.Duration
	for _, s := range p.steps[min(next, len(p.steps)):] {
		left += s.Estimate
	}
	return time.Duration(float64(left) * p.scale())
}

// scale is how much slower (> 1) or faster the finished steps ran than
// their estimates, within [1/4, 4]; 1 before any estimated step finished.
func (p *Plan) scale() float64 {
	if p.spentEst <= 0 {
		return 1
	}
	return min(4, max(0.25, float64(p.spentActual)/float64(p.spentEst)))
}

// Approx formats d for a person: "40s", "12 min", "1 h 05 min".
func Approx(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	default:
		m := int(d.Round(time.Minute) / time.Minute)
		return fmt.Sprintf("%d h %02d min", m/60, m%60)
	}
}
