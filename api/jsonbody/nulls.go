package jsonbody

import (
	"bytes"
	"reflect"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// TagNullable is the struct tag that lets a request's field be JSON null: `nullable:"true"` on a
// field whose null means something of its own (PUT /alerts' low_balance_threshold: no alert).
// Any other field sent as null is refused naming it: the decoder would take null for the field
// left out (a pointer stays nil, a number 0), so a client's null would quietly become the default
// instead of the 400 a value of the wrong type gets. The OpenAPI documents mark the same fields
// nullable.
const TagNullable = "nullable"

// refuseNulls reads body, which decoded into a value of type t, and refuses the first member or
// array element that is null where t's field is not tagged TagNullable. Below a value of a free
// form (an interface, a jsontext.Value, a type that decodes itself) nothing is looked at: the
// value is the caller's to read, nulls and all. prefix names the body's value, as in describe.
func refuseNulls(body []byte, t reflect.Type, prefix string) error {
	if !bytes.Contains(body, []byte("null")) {
		return nil // no null anywhere: most bodies are not read a second time
	}
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	if dec.PeekKind() == 'n' {
		if prefix == "" {
			return nil // the body as a whole is refused elsewhere (checkObject)
		}
		return fieldError(prefix, "must not be null; leave the field out to keep it unchanged or use its default")
	}
	field, err := firstNull(dec, t, prefix)
	if err != nil || field == "" {
		return nil // the decoder has already read and accepted the body; nothing to add
	}
	return fieldError(field, "must not be null; leave the field out to keep it unchanged or use its default")
}

// firstNull reads the next value of dec, of Go type t, and returns the name of its first null
// that t does not allow ("" when there is none).
func firstNull(dec *jsontext.Decoder, t reflect.Type, name string) (string, error) {
	t = deref(t)
	if freeForm(t) {
		return "", dec.SkipValue()
	}
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return "", err
		}
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return "", err
			}
			member := tok.String()
			mt, nullable, known := memberType(t, member)
			if !known {
				if err := dec.SkipValue(); err != nil {
					return "", err
				}
				continue
			}
			path := member
			if name != "" {
				path = name + "." + member
			}
			if dec.PeekKind() == 'n' {
				if !nullable && !takesNull(deref(mt)) {
					return path, nil
				}
				if err := dec.SkipValue(); err != nil {
					return "", err
				}
				continue
			}
			if found, err := firstNull(dec, mt, path); found != "" || err != nil {
				return found, err
			}
		}
		_, err := dec.ReadToken()
		return "", err
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return "", err
		}
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.PeekKind() != ']'; i++ {
			path := name + "[" + strconv.Itoa(i) + "]"
			if dec.PeekKind() == 'n' && elem != nil && !takesNull(deref(elem)) {
				return path, nil
			}
			if found, err := firstNull(dec, elem, path); found != "" || err != nil {
				return found, err
			}
		}
		_, err := dec.ReadToken()
		return "", err
	}
	return "", dec.SkipValue()
}

// memberType is the type of the member named name of a value of type t (a struct by its fields'
// JSON names, embedded structs included, or a map by its element type), whether its field allows
// null, and whether t has such a member at all.
func memberType(t reflect.Type, name string) (reflect.Type, bool, bool) {
	if t != nil && t.Kind() == reflect.Map {
		return t.Elem(), false, true
	}
	for n, f := range jsonFields(t) {
		if n == name {
			return f.Type, f.Tag.Get(TagNullable) == "true", true
		}
	}
	return nil, false, false
}

var (
	rawValueType     = reflect.TypeFor[jsontext.Value]()
	unmarshalerV2    = reflect.TypeFor[json.UnmarshalerFrom]()
	unmarshalerBytes = reflect.TypeFor[json.Unmarshaler]()
)

// freeForm reports whether a value of type t is read by its own rules, so that what it holds is
// not looked at: an interface, a raw jsontext.Value, or a type that decodes itself.
func freeForm(t reflect.Type) bool {
	if t == nil {
		return false
	}
	if takesNull(t) {
		return true
	}
	p := reflect.PointerTo(t)
	return p.Implements(unmarshalerV2) || p.Implements(unmarshalerBytes)
}

// takesNull reports whether a value of type t may itself be null: an interface or a raw
// jsontext.Value, whose reader decides (a type that decodes itself, such as time.Time, may not).
func takesNull(t reflect.Type) bool {
	return t != nil && (t.Kind() == reflect.Interface || t == rawValueType)
}

// deref is t without its pointers.
func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
