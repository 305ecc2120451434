package report

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"os"
	"strconv"
)

// Series is one line of a plot.
type Series struct {
	Name string
	X, Y []float64
}

// Plot is one panel: axes, ticks, lines with markers and a legend.
type Plot struct {
	Title, XLabel, YLabel string
	// LogX / LogY use a base-10 logarithmic axis (values must be > 0;
	// others are skipped).
	LogX, LogY bool
	Series     []Series
}

// palette of line colours, reused cyclically.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

const (
	panelW, panelH = 640, 360
	marginL        = 80
	marginR        = 20
	marginT        = 40
	marginB        = 55
)

// WriteSVGFile renders the panels stacked vertically into one SVG file.
func WriteSVGFile(path string, panels ...Plot) error {
	var b bytes.Buffer
	RenderSVG(&b, panels...)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write svg: %w", err)
	}
	return nil
}

// RenderSVG writes a self-contained SVG document with the panels stacked.
func RenderSVG(b *bytes.Buffer, panels ...Plot) {
	h := panelH * max(1, len(panels))
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", panelW, h, panelW, h)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", panelW, h)
	for i, p := range panels {
		fmt.Fprintf(b, `<g transform="translate(0,%d)">`+"\n", i*panelH)
		p.render(b)
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
}

type axis struct {
	log    bool
	lo, hi float64 // in transformed space
}

func (a axis) tf(v float64) float64 {
	if a.log {
		return math.Log10(v)
	}
	return v
}

func (a axis) frac(v float64) float64 {
	if a.hi == a.lo {
		return 0.5
	}
	return (a.tf(v) - a.lo) / (a.hi - a.lo)
}

func newAxis(vals []float64, log bool) axis {
	a := axis{log: log, lo: math.Inf(1), hi: math.Inf(-1)}
	for _, v := range vals {
		if log && !(v > 0) || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		t := a.tf(v)
		a.lo, a.hi = math.Min(a.lo, t), math.Max(a.hi, t)
	}
	if math.IsInf(a.lo, 0) {
		a.lo, a.hi = 0, 1
	}
	if log {
		a.lo, a.hi = math.Floor(a.lo), math.Ceil(a.hi)
		if a.lo == a.hi {
			a.hi++
		}
		return a
	}
	if a.lo > 0 {
		a.lo = 0 // linear axes start at zero so ratios read honestly
	}
	if a.hi == a.lo {
		a.hi = a.lo + 1
	}
	step := niceStep((a.hi - a.lo) / 5)
	a.hi = math.Ceil(a.hi/step) * step
	return a
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// ticks returns tick values in data space.
func (a axis) ticks() []float64 {
	var out []float64
	if a.log {
		for e := a.lo; e <= a.hi+1e-9; e++ {
			out = append(out, math.Pow(10, e))
		}
		return out
	}
	step := niceStep((a.hi - a.lo) / 5)
	for v := a.lo; v <= a.hi+step*1e-9; v += step {
		out = append(out, v)
	}
	return out
}

func tickLabel(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6 && math.Mod(v, 1e6) == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3 && math.Mod(v, 1e3) == 0:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "K"
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
}

func (p Plot) render(b *bytes.Buffer) {
	var xs, ys []float64
	for _, s := range p.Series {
		xs = append(xs, s.X...)
		ys = append(ys, s.Y...)
	}
	ax, ay := newAxis(xs, p.LogX), newAxis(ys, p.LogY)
	pw, ph := float64(panelW-marginL-marginR), float64(panelH-marginT-marginB)
	px := func(v float64) float64 { return marginL + ax.frac(v)*pw }
	py := func(v float64) float64 { return marginT + (1-ay.frac(v))*ph }

	fmt.Fprintf(b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", marginL, html.EscapeString(p.Title))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", marginL, marginT, pw, ph)
	for _, t := range ax.ticks() {
		x := px(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, x, marginT, x, marginT+ph)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, marginT+ph+16, tickLabel(t))
	}
	for _, t := range ay.ticks() {
		y := py(t)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, marginL, y, marginL+pw, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-6, y+4, tickLabel(t))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", marginL+pw/2, panelH-12, html.EscapeString(p.XLabel))
	fmt.Fprintf(b, `<text transform="translate(18,%.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", marginT+ph/2, html.EscapeString(p.YLabel))
	for i, s := range p.Series {
		col := palette[i%len(palette)]
		var pts bytes.Buffer
		for j := range s.X {
			if j >= len(s.Y) || (p.LogX && !(s.X[j] > 0)) || (p.LogY && !(s.Y[j] > 0)) {
				continue
			}
			x, y := px(s.X[j]), py(s.Y[j])
			fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, x, y, col)
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", bytes.TrimSpace(pts.Bytes()), col)
		ly := marginT + 14 + 16*i
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"/>`, marginL+pw-150, ly-4, marginL+pw-130, ly-4, col)
		fmt.Fprintf(b, `<text x="%.1f" y="%d">%s</text>`+"\n", marginL+pw-124, ly, html.EscapeString(s.Name))
	}
}
