package jsonbody_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/shotflow/shotflow/api/jsonbody"
)

// A body that is not JSON is explained in the client's terms, with its byte offset and field,
// never in the decoder's ("invalid character 'o' in literal null (expecting 'u')").
func TestSyntaxErrorsSpeakTheClientsTerms(t *testing.T) {
	for _, c := range []struct {
		body, want string
	}{
		{`{"count":nol}`, `The body is not valid JSON at byte 10, in count: found 'o' where the word null was being read; a value is a string in double quotes`},
		{`{"count":1,}`, `The body is not valid JSON at byte 10: a comma must be followed by another field or element; a comma before } or ] is not allowed`},
		{`{1:2}`, `The body is not valid JSON at byte 1: a field name in double quotes was expected`},
		{`{"count":}`, `The body is not valid JSON at byte 9, in count: a value was expected, not '}'`},
		{`{"count" 1}`, `a colon (:) was expected after the field name, not '1'`},
		{`{"count":1 "size_bytes":2}`, `a comma (,) or the end of the object (}) was expected after the value, not '"'`},
		{`{"imagesIds":["a" "b"]}`, `a comma (,) or the end of the array (]) was expected after the element, not '"'`},
		{`{"imagesIds":["a\qb"]}`, "the string holds the escape sequence `\\q`, which JSON does not have"},
		{"{\"imagesIds\":[\"a\tb\"]}", `the string holds the control character '\t'; escape it`},
		{`{"count":-}`, `the number is cut short: '}' is not a digit`},
		{`{"imagesIds":["\ud800"]}`, `half of a UTF-16 surrogate pair without its other half`},
	} {
		var req request
		err := jsonbody.Decode([]byte(c.body), &req)
		var e *jsonbody.Error
		if !errors.As(err, &e) {
			t.Fatalf("Decode(%q) = %v, want a *jsonbody.Error", c.body, err)
		}
		if !strings.Contains(e.Message, c.want) {
			t.Errorf("Decode(%q):\n got %q\nwant %q", c.body, e.Message, c.want)
		}
		for _, decoder := range []string{"invalid character", "in literal", "expecting", "start of value", "invalid escape"} {
			if strings.Contains(e.Message, decoder) {
				t.Errorf("Decode(%q): %q speaks the decoder's words (%q)", c.body, e.Message, decoder)
			}
		}
	}
}
