package audit

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// The row types are the single definition of each table: the JSON Lines
// and CSV writers and the JSON Schema below all read their fields, so the
// three can never disagree about a column.

// column is one field of a row type.
type column struct {
	name, desc string
	index      int
	typ        reflect.Type
}

func columns(t reflect.Type) []column {
	var cols []column
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		cols = append(cols, column{name: name, desc: f.Tag.Get("desc"), index: i, typ: f.Type})
	}
	return cols
}

// Columns returns a table's column names in order.
func (t Table) Columns() []string {
	var names []string
	for _, c := range columns(reflect.TypeOf(t.Rows).Elem()) {
		names = append(names, c.name)
	}
	return names
}

// Len is the number of rows.
func (t Table) Len() int { return reflect.ValueOf(t.Rows).Len() }

// WriteJSONL writes one JSON object per row, keys in column order; a
// missing value is null.
func (t Table) WriteJSONL(w io.Writer) error {
	rows := reflect.ValueOf(t.Rows)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range rows.Len() {
		if err := enc.Encode(rows.Index(i).Interface()); err != nil {
			return fmt.Errorf("writing %s row %d: %w", t.Name, i+1, err)
		}
	}
	return nil
}

// WriteCSV writes a header of column names and one record per row; times
// are RFC 3339 in UTC, a missing value is an empty field, and a text cell
// that a spreadsheet would run as a formula starts with ' (csvText).
func (t Table) WriteCSV(w io.Writer) error {
	rows := reflect.ValueOf(t.Rows)
	cols := columns(rows.Type().Elem())
	cw := csv.NewWriter(w)
	if err := cw.Write(t.Columns()); err != nil {
		return err
	}
	rec := make([]string, len(cols))
	for i := range rows.Len() {
		row := rows.Index(i)
		for j, c := range cols {
			rec[j] = csvValue(row.Field(c.index))
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("writing %s row %d: %w", t.Name, i+1, err)
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvValue(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	switch x := v.Interface().(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case string:
		return csvText(x)
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v.Interface())
}

// SchemaBase is where the published schemas live (docs/export/ in the
// repository); each table's $id is SchemaBase + <name>.schema.json.
const SchemaBase = "https://nova-platform.dev/schemas/export/"

// Schema returns the table's JSON Schema (draft 2020-12) of one JSON Lines
// row: every column required, no other property, null only where a value
// can be missing.
func (t Table) Schema() []byte {
	var props orderedProps
	var required []string
	for _, c := range columns(reflect.TypeOf(t.Rows).Elem()) {
		props = append(props, prop{c.name, columnSchema(c)})
		required = append(required, c.name)
	}
	s := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"$id":                  SchemaBase + t.Name + ".schema.json",
		"title":                "Nova export: " + t.Name,
		"description":          t.Description + " Every row carries the id of the event it comes from and the evidence commit that added that event.",
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(s)
	return b.Bytes()
}

// orderedProps keeps the schema's properties in column order, the order
// a reader of the schema expects and the one the files are written in.
type orderedProps []prop

type prop struct {
	name   string
	schema map[string]any
}

func (o orderedProps) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.name)
		v, err := json.Marshal(p.schema)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func columnSchema(c column) map[string]any {
	typ, nullable := c.typ, false
	if typ.Kind() == reflect.Pointer {
		typ, nullable = typ.Elem(), true
	}
	s := map[string]any{"description": c.desc}
	name := ""
	switch {
	case typ == reflect.TypeOf(time.Time{}):
		name, s["format"] = "string", "date-time"
	case typ.Kind() == reflect.String:
		name = "string"
	case typ.Kind() == reflect.Bool:
		name = "boolean"
	case typ.Kind() == reflect.Int64:
		name = "integer"
	case typ.Kind() == reflect.Float64:
		name = "number"
	default:
		panic("audit: no schema for column type " + typ.String())
	}
	if nullable {
		s["type"] = []string{name, "null"}
	} else {
		s["type"] = name
	}
	return s
}
