package measure

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// Progress draws a one-line progress bar on a terminal. Add may be called
// from several goroutines; Done from one. A nil *Progress does nothing, so
// callers need not check whether it is enabled.
type Progress struct {
	w     io.Writer
	label string
	total int64
	n     atomic.Int64
	start time.Time
	last  atomic.Int64 // unix nanos of the last redraw
}

// NewProgress returns a bar for total items written to stderr, or nil when
// force is false and stderr is not a terminal.
func NewProgress(label string, total int, force bool) *Progress {
	if !force && !isTerminal(os.Stderr) {
		return nil
	}
	return &Progress{w: os.Stderr, label: label, total: int64(total), start: time.Now()}
}

// isTerminal reports whether f is a character device (a tty), without
// depending on x/term.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Add records n more items done and redraws at most ten times a second.
func (p *Progress) Add(n int) {
	if p == nil {
		return
	}
	done := p.n.Add(int64(n))
	now := time.Now().UnixNano()
	last := p.last.Load()
	if now-last < int64(100*time.Millisecond) && done < p.total {
		return
	}
	if !p.last.CompareAndSwap(last, now) {
		return
	}
	p.draw(done)
}

func (p *Progress) draw(done int64) {
	const width = 30
	frac := 0.0
	if p.total > 0 {
		frac = min(1, float64(done)/float64(p.total))
	}
	fill := int(frac * width)
	el := time.Since(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(done) / el
	}
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %.0f/s", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), done, p.total, rate)
}

// Done draws the final state and ends the line.
func (p *Progress) Done() {
	if p == nil {
		return
	}
	p.draw(p.n.Load())
	fmt.Fprintln(p.w)
}
