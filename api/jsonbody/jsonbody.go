// Package jsonbody decodes the JSON request bodies of both APIs strictly and explains a refused
// body in the client's terms. A body is exactly one JSON object of valid UTF-8; member names
// match the request's fields exactly (case included), a name given twice and a name the request
// does not know are refused, and a value of the wrong type is named with what was expected and
// what was received: "size_bytes must be an integer, not a string",
// "config.product.Id is not a field of this request; did you mean id? Field names are
// case-sensitive". Fields are named as the APIs name them: dotted, with array indexes in
// brackets (subjects[0].images_count). Messages never carry Go types or decoder internals.
//
// It is built on github.com/go-json-experiment/json (the reference implementation of Go's
// encoding/json/v2), whose decoding is strict by default and whose errors locate the value at
// fault by JSON pointer.
package jsonbody

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Error is a refused body: Field names the value at fault as the API names it ("" when it is the
// body as a whole) and Message explains the refusal, starting with the field's name or with "The
// body", without a final period.
type Error struct {
	Field   string
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Decode decodes body, which must be one JSON object, into dst, a pointer to the request's struct
// (or to a map), and returns an *Error for any body it refuses, a member sent as null included
// unless its field is tagged TagNullable.
func Decode(body []byte, dst any) error {
	if err := checkObject(body); err != nil {
		return err
	}
	if err := json.Unmarshal(body, dst, json.RejectUnknownMembers(true)); err != nil {
		return describe(err, "")
	}
	return refuseNulls(body, reflect.TypeOf(dst), "")
}

// DecodeValue decodes raw, the value of the body's field named field (as Members returned it),
// into dst as strictly as Decode, naming the fields of its refusals from field: for the routes
// that decode a body member by member.
func DecodeValue(field string, raw jsontext.Value, dst any) error {
	if err := json.Unmarshal(raw, dst, json.RejectUnknownMembers(true)); err != nil {
		return describe(err, field)
	}
	return refuseNulls(raw, reflect.TypeOf(dst), field)
}

// Members reads body, which must be one JSON object, as its members, each value still undecoded:
// for the routes that look at which names were sent before decoding them. Names are kept exactly
// as sent; a name given twice is refused.
func Members(body []byte) (map[string]jsontext.Value, error) {
	var members map[string]jsontext.Value
	if err := Decode(body, &members); err != nil {
		return nil, err
	}
	return members, nil
}

// checkObject refuses a body that is empty, not valid UTF-8 or whose value is not an object.
func checkObject(body []byte) error {
	if !utf8.Valid(body) {
		return bodyError("The body is not valid UTF-8 (at byte %d); send text encoded as UTF-8", invalidUTF8At(body))
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return bodyError("The body is empty; send a JSON object")
	}
	if kind := jsontext.Value(trimmed[:1]).Kind(); kind != '{' && kind != 0 {
		return bodyError("The body must be a JSON object, not %s", kindName(kind))
	}
	return nil
}

// invalidUTF8At is the offset of the first byte of body that is not valid UTF-8.
func invalidUTF8At(body []byte) int {
	for i := 0; i < len(body); {
		r, size := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(body)
}

func bodyError(format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...)}
}

func fieldError(field, format string, args ...any) *Error {
	return &Error{Field: field, Message: field + " " + fmt.Sprintf(format, args...)}
}

// describe turns an error of the decoder into an *Error; prefix names the value decoded ("" for
// the body).
func describe(err error, prefix string) *Error {
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return describeSyntax(syn, prefix)
	}
	var sem *json.SemanticError
	if errors.As(err, &sem) {
		return describeSemantic(sem, prefix)
	}
	return bodyError("The body is not valid JSON")
}

// describeSyntax explains a body that is not one well-formed JSON object with unique names.
func describeSyntax(e *jsontext.SyntacticError, prefix string) *Error {
	reason := "invalid JSON"
	if e.Err != nil {
		reason = strings.TrimPrefix(e.Err.Error(), "jsontext: ")
	}
	switch {
	case errors.Is(e.Err, jsontext.ErrDuplicateName):
		return fieldError(join(prefix, e.JSONPointer), "is given more than once; send each field once")
	case strings.Contains(reason, "after top-level value"):
		return bodyError("The body must be a single JSON object; more follows it at byte %d", e.ByteOffset)
	case strings.Contains(reason, "unexpected EOF"):
		return bodyError("The body is not valid JSON: it ends at byte %d, before the object is complete", e.ByteOffset)
	}
	reason = plainSyntax(reason)
	if field := join(prefix, e.JSONPointer); field != "" {
		return &Error{Field: field, Message: fmt.Sprintf("The body is not valid JSON at byte %d, in %s: %s", e.ByteOffset, field, reason)}
	}
	return bodyError("The body is not valid JSON at byte %d: %s", e.ByteOffset, reason)
}

// invalidText matches the decoder's reasons for text it cannot read: "invalid character 'o' in
// literal null (expecting 'u')", "invalid escape sequence `\x` in string".
var invalidText = regexp.MustCompile(`^invalid (character|escape sequence|surrogate pair) (.+?) (at start of value|after object name \(expecting ':'\)|after object value \(expecting ',' or '\}'\)|after array (?:element|value) \(expecting ',' or '\]'\)|in literal (\w+) \(expecting .+\)|at start of string \(expecting '"'\)|in string \(expecting non-control character\)|in number \(expecting digit\)|in string)$`)

// loneSurrogate is the escape of half a surrogate pair in the decoder's quote of the text.
var loneSurrogate = regexp.MustCompile(`\\u[0-9a-fA-F]{4}`)

// plainSyntax says what is wrong with the text in the client's terms instead of the decoder's:
// "found 'o' where the word null was being read; a value is a string in double quotes, a
// number, true, false, null, an object or an array". A reason it does not know is kept as it is.
func plainSyntax(reason string) string {
	if strings.Contains(reason, "object member name must be a string") {
		return "a field name in double quotes was expected"
	}
	m := invalidText.FindStringSubmatch(reason)
	if m == nil {
		return reason
	}
	label, what, where := m[1], m[2], m[3]
	const values = "a value is a string in double quotes, a number, true, false, null, an object or an array"
	switch {
	case label == "surrogate pair":
		if u := loneSurrogate.FindString(what); u != "" {
			what = "`" + u + "`"
		}
		return "the string holds " + what + ", half of a UTF-16 surrogate pair without its other half; escape a character outside the Basic Multilingual Plane as both halves, or send it as UTF-8"
	case label == "escape sequence":
		return "the string holds the escape sequence " + what + ", which JSON does not have (it has \\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t and \\uXXXX)"
	case where == "at start of value" && what == "','":
		return "a comma must be followed by another field or element; a comma before } or ] is not allowed"
	case where == "at start of value":
		return "a value was expected, not " + what + "; " + values
	case strings.HasPrefix(where, "after object name"):
		return "a colon (:) was expected after the field name, not " + what
	case strings.HasPrefix(where, "after object value"):
		return "a comma (,) or the end of the object (}) was expected after the value, not " + what
	case strings.HasPrefix(where, "after array"):
		return "a comma (,) or the end of the array (]) was expected after the element, not " + what
	case strings.HasPrefix(where, "in literal"):
		return "found " + what + " where the word " + m[4] + " was being read; " + values
	case strings.HasPrefix(where, "at start of string"):
		return "a field name in double quotes was expected, not " + what + " (a comma after the last field of an object is not allowed)"
	case strings.HasPrefix(where, "in string"):
		return "the string holds the control character " + what + "; escape it (\\n, \\t, \\u0000 …)"
	case strings.HasPrefix(where, "in number"):
		return "the number is cut short: " + what + " is not a digit"
	}
	return reason
}

// describeSemantic explains a well-formed body whose content does not fit the request: an unknown
// name or a value of the wrong type.
func describeSemantic(e *json.SemanticError, prefix string) *Error {
	field := join(prefix, e.JSONPointer)
	if errors.Is(e.Err, json.ErrUnknownName) {
		return unknownField(prefix, e.JSONPointer, e.GoType)
	}
	if field == "" {
		return bodyError("The body must be a JSON object, not %s", kindName(e.JSONKind))
	}
	want := expected(e.GoType)
	if want == "" {
		return fieldError(field, "has a value this request cannot take")
	}
	got := kindName(e.JSONKind)
	if e.JSONKind == '0' && len(e.JSONValue) > 0 {
		got = truncate(string(e.JSONValue))
		if isInteger(e.JSONValue) && want == "an integer" {
			if bytes.ContainsAny(e.JSONValue, ".eE") && fitsInt64(e.JSONValue) {
				// 2.0 or 2e0: a whole number, but integers are written as such.
				return fieldError(field, "must be an integer written without a fraction or exponent, not %s", got)
			}
			return fieldError(field, "is too large: %s is out of range", got)
		}
	}
	return fieldError(field, "must be %s, not %s", want, got)
}

// unknownField names a member the request does not know, and the field it may have meant or the
// fields its object takes.
func unknownField(prefix string, ptr jsontext.Pointer, parent reflect.Type) *Error {
	field := join(prefix, ptr)
	name := ptr.LastToken()
	known := fieldNames(parent)
	msg := field + " is not a field of this request"
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return &Error{Field: field, Message: msg + "; did you mean " + k + "? Field names are case-sensitive"}
		}
	}
	if len(known) > 0 {
		where := "the body"
		if p := join(prefix, ptr.Parent()); p != "" {
			where = p
		}
		msg += "; " + where + " takes only " + strings.Join(known, ", ")
	}
	return &Error{Field: field, Message: msg}
}

// fieldNames lists the JSON names of a struct's fields, in declaration order (none for another
// type).
func fieldNames(t reflect.Type) []string {
	var names []string
	for name := range jsonFields(t) {
		names = append(names, name)
	}
	return names
}

// jsonFields yields the JSON name and the field of each field of a struct (t, or what t points
// to) the decoder reads, in declaration order, the fields of embedded structs in their place;
// nothing for another type.
func jsonFields(t reflect.Type) iter.Seq2[string, reflect.StructField] {
	return func(yield func(string, reflect.StructField) bool) {
		t = deref(t)
		if t == nil || t.Kind() != reflect.Struct {
			return
		}
		for f := range t.Fields() {
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
				continue
			case f.Anonymous && name == "":
				for n, inner := range jsonFields(f.Type) {
					if !yield(n, inner) {
						return
					}
				}
				continue
			case name == "":
				name = f.Name
			}
			if !yield(name, f) {
				return
			}
		}
	}
}

// expected says what a value of Go type t is in JSON terms ("" when it cannot be said).
func expected(t reflect.Type) string {
	t = deref(t)
	if t == nil {
		return ""
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return ""
}

// kindName names a kind of JSON value as a client reads it.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "something else"
}

// isInteger reports whether a JSON number is a whole number (1e40, 12, -3.0).
func isInteger(v jsontext.Value) bool {
	f, err := strconv.ParseFloat(string(v), 64)
	return (err == nil || errors.Is(err, strconv.ErrRange)) && f == math.Trunc(f)
}

// fitsInt64 reports whether a whole JSON number is within the range of a 64-bit integer.
func fitsInt64(v jsontext.Value) bool {
	f, err := strconv.ParseFloat(string(v), 64)
	return err == nil && f >= math.MinInt64 && f <= math.MaxInt64
}

func truncate(s string) string {
	const most = 32
	if len(s) <= most {
		return s
	}
	return s[:most] + "…"
}

// join names the value at ptr within the value named prefix.
func join(prefix string, ptr jsontext.Pointer) string {
	name := FieldName(ptr)
	switch {
	case prefix == "":
		return name
	case name == "" || strings.HasPrefix(name, "["):
		return prefix + name
	}
	return prefix + "." + name
}

// FieldName writes a JSON pointer as the APIs name fields: "/subjects/0/images_count" is
// subjects[0].images_count; the empty pointer (the body) is "".
func FieldName(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if isIndex(tok) {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// isIndex reports whether a pointer token is an array index. The request bodies of both APIs
// have no object with numeric names, so a numeric token is an index.
func isIndex(tok string) bool {
	if tok == "" {
		return false
	}
	for _, r := range tok {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
