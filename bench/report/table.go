package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// A row type names its table cells with struct tags. Every exported field
// that encoding/json would write is a cell keyed by its JSON name
// (embedded structs are flattened, `json:"-"` fields are left out); a field
// that also carries a `table` tag is a column, headed by the tag's value or,
// when that is empty, by its JSON name:
//
//	QPS      float64 `json:"qps" table:""`            // column "qps"
//	PairsPS  float64 `json:"pairs_per_s" table:"pairs/s"` // column "pairs/s"
//	Postings int     `json:"postings"`                 // JSON only
//
// A zero value of an omitempty field is no value: "–" in the table, absent
// from the JSON line. So the result struct is the one schema of both.

// field is one cell of a row type.
type field struct {
	header    string // column header (the JSON name unless the table tag says otherwise)
	column    bool
	omitEmpty bool
	index     []int
}

var fieldCache sync.Map // reflect.Type → []field

// fieldsOf returns the cells of struct type t in field order.
func fieldsOf(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	var out []field
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" && opts == "" || !sf.IsExported() && !sf.Anonymous {
				continue
			}
			idx := append(slices.Clone(index), i)
			if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
				walk(sf.Type, idx)
				continue
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			f := field{header: name, index: idx, omitEmpty: strings.Contains(","+opts+",", ",omitempty,")}
			if h, ok := sf.Tag.Lookup("table"); ok {
				f.column = true
				if h != "" {
					f.header = h
				}
			}
			out = append(out, f)
		}
	}
	walk(t, nil)
	fieldCache.Store(t, out)
	return out
}

// Columns returns the column headers of the given row types (values or
// pointers of struct types; anything else adds none), merged into one
// header: each type's columns keep their order, and a column the earlier
// types lack goes right before the next of its type's columns that they
// have (at the end when there is none). A report whose rows are of several
// kinds thus has one table in which every kind reads in its own order.
func Columns(rowTypes ...any) []string {
	var out []string
	for _, v := range rowTypes {
		t := reflect.TypeOf(v)
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			continue
		}
		var cols []string
		for _, f := range fieldsOf(t) {
			if f.column && !slices.Contains(cols, f.header) {
				cols = append(cols, f.header)
			}
		}
		for i, c := range cols {
			if slices.Contains(out, c) {
				continue
			}
			pos := len(out)
			for _, next := range cols[i+1:] {
				if j := slices.Index(out, next); j >= 0 {
					pos = j
					break
				}
			}
			out = slices.Insert(out, pos, c)
		}
	}
	return out
}

// Cells returns a row's values by header: the fields of a struct (see the
// tags above). A zero omitempty field has no entry.
func Cells(row any) (map[string]any, error) {
	v := reflect.ValueOf(row)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("report: row of type %T is not a struct", row)
	}
	fs := fieldsOf(v.Type())
	out := make(map[string]any, len(fs))
	for _, f := range fs {
		fv, err := v.FieldByIndexErr(f.index)
		if err != nil || f.omitEmpty && fv.IsZero() {
			continue
		}
		if _, dup := out[f.header]; !dup {
			out[f.header] = fv.Interface()
		}
	}
	return out, nil
}

// WriteTable writes rows as a markdown table with the given columns; a
// cell a row lacks prints as "–".
func WriteTable(w io.Writer, columns []string, rows []any) error {
	var b strings.Builder
	b.WriteString("| " + strings.Join(columns, " | ") + " |\n|")
	for range columns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	cells := make([]string, len(columns))
	for _, r := range rows {
		m, err := Cells(r)
		if err != nil {
			return err
		}
		for i, c := range columns {
			cells[i] = FormatValue(m[c])
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FormatValue prints a table cell: floats with 4 decimals below 10, 1
// decimal below 1000 and none above; maps and slices as JSON; nil as "–";
// "|" escaped.
func FormatValue(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return "–"
	case float64:
		return formatFloat(x)
	case float32:
		return formatFloat(float64(x))
	case fmt.Stringer:
		s = x.String()
	default:
		switch reflect.ValueOf(v).Kind() {
		case reflect.Map, reflect.Slice, reflect.Struct:
			j, err := json.Marshal(v)
			if err != nil {
				return fmt.Sprint(v)
			}
			s = string(j)
		default:
			s = fmt.Sprint(v)
		}
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

func formatFloat(x float64) string {
	a := math.Abs(x)
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return fmt.Sprint(x)
	case a == 0 || a < 10:
		return fmt.Sprintf("%.4f", x)
	case a < 1000:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.0f", x)
	}
}

// Line renders row's columns on one line ("dataset=scifact qps=36900 …"),
// for progress logs.
func Line(row any) string {
	m, err := Cells(row)
	if err != nil {
		return fmt.Sprint(row)
	}
	var b strings.Builder
	for _, c := range Columns(row) {
		if v, ok := m[c]; ok {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(c + "=" + FormatValue(v))
		}
	}
	return b.String()
}

// Rows converts typed rows into a Report's rows.
func Rows[T any](rows []T) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out
}

// Log writes Line(row) and a newline to w, a driver's progress log; a nil
// w writes nothing.
func Log(w io.Writer, row any) {
	if w != nil {
		fmt.Fprintln(w, Line(row))
	}
}
