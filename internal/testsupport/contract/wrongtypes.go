package contract

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"
)

// WrongType is a request whose JSON body gives one field a value of another type than the
// document's: the service must refuse it with a 400 whose message names Field and says it must be
// Expected.
type WrongType struct {
	Method string
	// Path is the operation's path under the document's server, its parameters filled with
	// fresh UUIDs (a record that does not exist: the body is refused before it is looked up).
	Path string
	// Field names the field as the APIs do: subjects[0].images_count, config.product.id.
	Field string
	// Expected is what the field must be, as the messages say it: "a string", "an integer", "a
	// number", "true or false", "an array" or "an object".
	Expected string
	// Body is the operation's required fields with sample values, and the wrong value at Field.
	Body []byte
}

// WrongTypes returns, for every operation of the document that takes a JSON body, one request per
// field its schema describes (nested objects and the first element of arrays included) in which
// that field, and only that one, has a value of another JSON type. The sample values of the other
// fields are valid in type (enum members, UUIDs where the format is uuid), so that a route that
// reads its body field by field reaches the wrong one.
func (d *Document) WrongTypes() ([]WrongType, error) {
	return d.bodiesWith(func(f field) (any, string, bool) { return f.wrong, f.expected, true })
}

// Nulls returns, for every operation of the document that takes a JSON body, one request per
// field its schema describes (nested objects and the first element of arrays included) that does
// not allow null, in which that field, and only that one, is null: the service must refuse it with
// a 400 whose message names Field and says it must not be null (Expected is empty).
func (d *Document) Nulls() ([]WrongType, error) {
	return d.bodiesWith(func(f field) (any, string, bool) { return nil, "", !f.nullable })
}

// bodiesWith builds, for every field of every JSON body of the document for which value says so,
// the operation's sample body with that field set to value's answer.
func (d *Document) bodiesWith(value func(field) (v any, expected string, ok bool)) ([]WrongType, error) {
	doc, err := d.Load()
	if err != nil {
		return nil, err
	}
	var out []WrongType
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		for method, op := range item.Operations() {
			schema := jsonBodySchema(op)
			if schema == nil {
				continue
			}
			concrete := fillPathParams(path)
			for _, f := range schemaFields(schema, nil) {
				v, expected, ok := value(f)
				if !ok {
					continue
				}
				body := sample(schema).(map[string]any)
				setAt(body, schema, f.tokens, v)
				data, err := json.Marshal(body)
				if err != nil {
					return nil, err
				}
				out = append(out, WrongType{Method: method, Path: concrete, Field: fieldName(f.tokens), Expected: expected, Body: data})
			}
		}
	}
	slices.SortFunc(out, func(a, b WrongType) int {
		return strings.Compare(a.Method+a.Path+a.Field, b.Method+b.Path+b.Field)
	})
	return out, nil
}

// jsonBodySchema is the schema of an operation's application/json request body, nil when it
// takes none (or its schema is not an object).
func jsonBodySchema(op *openapi3.Operation) *openapi3.Schema {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	media := op.RequestBody.Value.Content.Get("application/json")
	if media == nil || media.Schema == nil || media.Schema.Value == nil || !media.Schema.Value.Type.Is("object") {
		return nil
	}
	return media.Schema.Value
}

func fillPathParams(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			parts[i] = uuid.NewString()
		}
	}
	return strings.Join(parts, "/")
}

// field is a field of a body schema: its path (names, and 0 for an array's first element), a
// value of another type than the schema's, what the schema expects and whether it allows null.
type field struct {
	tokens   []any
	wrong    any
	expected string
	nullable bool // the schema allows null
}

// wrongValues are, per JSON type, a value of another type and how the messages name the type.
var wrongValues = map[string]struct {
	value    any
	expected string
}{
	"string":  {12345, "a string"},
	"integer": {"7", "an integer"},
	"number":  {"7", "a number"},
	"boolean": {"true", "true or false"},
	"array":   {map[string]any{}, "an array"},
	"object":  {"x", "an object"},
}

// schemaFields lists the fields of an object schema and of its nested objects and arrays, in
// name order.
func schemaFields(s *openapi3.Schema, prefix []any) []field {
	var out []field
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		ref := s.Properties[name]
		if ref == nil || ref.Value == nil {
			continue
		}
		out = append(out, valueFields(ref.Value, append(slices.Clone(prefix), name))...)
	}
	return out
}

// valueFields is the field at tokens, whose schema is s, and the fields within it.
func valueFields(s *openapi3.Schema, tokens []any) []field {
	s = resolve(s)
	typ := schemaType(s)
	w, ok := wrongValues[typ]
	if !ok {
		return nil // no single type (free-form): any value is of the right type
	}
	nullable := s.Nullable || (s.Type != nil && s.Type.Includes("null"))
	out := []field{{tokens: tokens, wrong: w.value, expected: w.expected, nullable: nullable}}
	switch {
	case typ == "object":
		out = append(out, schemaFields(s, tokens)...)
	case typ == "array" && s.Items != nil && s.Items.Value != nil:
		out = append(out, valueFields(s.Items.Value, append(slices.Clone(tokens), 0))...)
	}
	return out
}

// resolve is the schema a lone allOf wraps (a $ref with its own description), else s.
func resolve(s *openapi3.Schema) *openapi3.Schema {
	for s.Type == nil && len(s.AllOf) == 1 && s.AllOf[0].Value != nil {
		s = s.AllOf[0].Value
	}
	return s
}

// schemaType is the one JSON type a schema allows ("" for none or several).
func schemaType(s *openapi3.Schema) string {
	if s.Type == nil {
		return ""
	}
	// A copy: DeleteFunc works in place, and the document's own types must keep their null (the
	// validator reads them afterwards).
	types := slices.DeleteFunc(slices.Clone(s.Type.Slice()), func(t string) bool { return t == "null" })
	if len(types) != 1 {
		return ""
	}
	return types[0]
}

// sample is a value of schema s that is valid in type: an object with its required properties,
// an enum's or const's first value, a UUID for format uuid.
func sample(s *openapi3.Schema) any {
	s = resolve(s)
	switch {
	case s.Const != nil:
		return s.Const
	case len(s.Enum) > 0:
		return s.Enum[0]
	}
	switch schemaType(s) {
	case "object":
		obj := map[string]any{}
		for _, name := range s.Required {
			if p := s.Properties[name]; p != nil && p.Value != nil {
				obj[name] = sample(p.Value)
			}
		}
		return obj
	case "array":
		return []any{}
	case "integer", "number":
		if s.Min != nil && *s.Min > 1 {
			return *s.Min
		}
		return 1
	case "boolean":
		return false
	case "string":
		if s.Format == "uuid" {
			return uuid.NewString()
		}
		return "x"
	}
	return nil
}

// setAt puts v at tokens within body (whose schema is s), creating the objects and arrays on the
// way from their schemas' samples.
func setAt(body map[string]any, s *openapi3.Schema, tokens []any, v any) {
	var container any = body
	for i, tok := range tokens {
		last := i == len(tokens)-1
		switch c := container.(type) {
		case map[string]any:
			name := tok.(string)
			s = resolve(s.Properties[name].Value)
			if last {
				c[name] = v
				return
			}
			if _, ok := c[name]; !ok || schemaType(s) == "array" {
				c[name] = emptyOf(s)
			}
			container = c[name]
		case []any:
			s = resolve(s.Items.Value)
			if last {
				c[0] = v
				return
			}
			c[0] = emptyOf(s)
			container = c[0]
		}
	}
}

// emptyOf is the container a path goes through: a one-element array (the element still to be
// set) or the object's sample.
func emptyOf(s *openapi3.Schema) any {
	if schemaType(s) == "array" {
		return []any{nil}
	}
	return sample(s)
}

// fieldName writes tokens as the APIs name fields: subjects[0].images_count.
func fieldName(tokens []any) string {
	var b strings.Builder
	for _, tok := range tokens {
		switch t := tok.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", t)
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(t)
		}
	}
	return b.String()
}

// goInternals are fragments of Go's and its JSON decoders' messages, and of the service's Go
// names, that an error message must never show a client.
var goInternals = []string{"json:", "jsontext", "Go ", "Go struct", "struct", "unmarshal", "Unmarshal", "int64", "float64",
	"string into", "[]", "map[", "reflect", "within \"", "plugin.", "external.", "jsonbody", "RawMessage"}

// GoInternal returns the first fragment of Go internals that message shows ("" when none does).
func GoInternal(message string) string {
	for _, frag := range goInternals {
		if strings.Contains(message, frag) {
			return frag
		}
	}
	return ""
}
