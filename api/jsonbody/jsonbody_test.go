package jsonbody_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/shotflow/shotflow/api/jsonbody"
)

type product struct {
	ID *string `json:"id"`
}

type subject struct {
	ProductRef  string `json:"product_ref"`
	ImagesCount int    `json:"images_count"`
	Auto        bool   `json:"auto_register_packshot"`
}

type request struct {
	Count    *int      `json:"count"`
	Size     int64     `json:"size_bytes"`
	Ratio    float64   `json:"ratio"`
	Subjects []subject `json:"subjects"`
	Config   *struct {
		Product *product `json:"product"`
	} `json:"config"`
	IDs []string `json:"imagesIds"`
}

// goInternals are fragments of Go's and the decoder's own messages that a client must never see.
var goInternals = []string{"json:", "jsontext", "Go ", "struct", "unmarshal", "int64", "string into", "jsonbody", "reflect", "within \""}

func TestDecodeRefusesWithMessagesInTheClientsTerms(t *testing.T) {
	cases := []struct {
		name, body, field string
		want              []string
	}{
		{"string for integer", `{"size_bytes":"12"}`, "size_bytes", []string{"size_bytes must be an integer, not a string"}},
		{"fraction for integer", `{"count":1.5}`, "count", []string{"count must be an integer, not 1.5"}},
		{"integer out of range", `{"size_bytes":1e40}`, "size_bytes", []string{"size_bytes is too large", "1e40"}},
		{"integer with a fraction", `{"size_bytes":2.0}`, "size_bytes", []string{"size_bytes must be an integer written without a fraction or exponent, not 2.0"}},
		{"integer with an exponent", `{"count":2e0}`, "count", []string{"count must be an integer written without a fraction or exponent, not 2e0"}},
		{"nested index", `{"subjects":[{"product_ref":"a","images_count":1},{"images_count":"2"}]}`, "subjects[1].images_count",
			[]string{"subjects[1].images_count must be an integer, not a string"}},
		{"boolean", `{"subjects":[{"auto_register_packshot":"yes"}]}`, "subjects[0].auto_register_packshot",
			[]string{"subjects[0].auto_register_packshot must be true or false, not a string"}},
		{"number for float", `{"ratio":"x"}`, "ratio", []string{"ratio must be a number, not a string"}},
		{"object for array", `{"subjects":{}}`, "subjects", []string{"subjects must be an array, not an object"}},
		{"number for object", `{"config":3}`, "config", []string{"config must be an object, not a number"}},
		{"array for string", `{"imagesIds":[1]}`, "imagesIds[0]", []string{"imagesIds[0] must be a string, not a number"}},
		{"boolean for string", `{"config":{"product":{"id":true}}}`, "config.product.id", []string{"config.product.id must be a string, not a boolean"}},
		{"key in another case", `{"config":{"product":{"Id":"x"}}}`, "config.product.Id",
			[]string{"config.product.Id is not a field of this request", "did you mean id?", "case-sensitive"}},
		{"top-level key in another case", `{"Count":3}`, "Count", []string{"Count is not a field", "did you mean count?"}},
		{"unknown key", `{"colour":"red"}`, "colour", []string{"colour is not a field of this request", "the body takes only count, size_bytes"}},
		{"unknown nested key", `{"subjects":[{"sku":"x"}]}`, "subjects[0].sku",
			[]string{"subjects[0].sku is not a field", "subjects[0] takes only product_ref, images_count, auto_register_packshot"}},
		{"duplicate key", `{"count":1,"count":2}`, "count", []string{"count is given more than once"}},
		{"duplicate nested key", `{"config":{"product":{"id":"a","id":"b"}}}`, "config.product.id", []string{"config.product.id is given more than once"}},
		{"duplicate key in another case", `{"count":1,"Count":2}`, "Count", []string{"Count is not a field", "did you mean count?"}},
		{"invalid UTF-8 in a string", "{\"imagesIds\":[\"a\xffb\"]}", "", []string{"not valid UTF-8", "byte 16"}},
		{"invalid UTF-8 after the object", "{\"count\":1} \xfe", "", []string{"not valid UTF-8", "byte 12"}},
		{"empty", ``, "", []string{"The body is empty"}},
		{"blank", " \n", "", []string{"The body is empty"}},
		{"array body", `[{"count":1}]`, "", []string{"The body must be a JSON object, not an array"}},
		{"null body", `null`, "", []string{"The body must be a JSON object, not null"}},
		{"string body", `"x"`, "", []string{"The body must be a JSON object, not a string"}},
		{"two objects", `{"count":1}{"count":2}`, "", []string{"The body must be a single JSON object", "byte 11"}},
		{"truncated", `{"count":`, "", []string{"The body is not valid JSON", "ends at byte 9"}},
		{"trailing comma", `{"count":1,}`, "", []string{"The body is not valid JSON at byte 10", "a comma before } or ] is not allowed"}},
		{"not JSON", `{count:1}`, "", []string{"The body is not valid JSON at byte 1"}},
		{"lone surrogate", `{"imagesIds":["\ud800"]}`, "imagesIds[0]", []string{"The body is not valid JSON at byte 15, in imagesIds[0]: the string holds `\\ud800`, half of a UTF-16 surrogate pair"}},
		{"bad literal", `{"count":tru}`, "count", []string{"not valid JSON at byte 12, in count: found '}' where the word true was being read"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var req request
			err := jsonbody.Decode([]byte(c.body), &req)
			var e *jsonbody.Error
			if !errors.As(err, &e) {
				t.Fatalf("Decode(%q) = %v, want a *jsonbody.Error", c.body, err)
			}
			if e.Field != c.field {
				t.Errorf("Field = %q, want %q", e.Field, c.field)
			}
			for _, w := range c.want {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q does not contain %q", e.Message, w)
				}
			}
			for _, bad := range goInternals {
				if strings.Contains(e.Message, bad) {
					t.Errorf("message %q exposes %q", e.Message, bad)
				}
			}
		})
	}
}

func TestDecodeAcceptsAnExactBody(t *testing.T) {
	var req request
	body := ` {"count":3,"size_bytes":12,"subjects":[{"product_ref":"p","images_count":2,"auto_register_packshot":true}],` +
		`"config":{"product":{"id":"x"}},"imagesIds":["a"],"ratio":0.5} `
	if err := jsonbody.Decode([]byte(body), &req); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if *req.Count != 3 || req.Size != 12 || req.Subjects[0].ImagesCount != 2 || !req.Subjects[0].Auto ||
		*req.Config.Product.ID != "x" || req.IDs[0] != "a" {
		t.Fatalf("decoded %+v", req)
	}
}

func TestMembersKeepsNamesAsSentAndRefusesDuplicates(t *testing.T) {
	m, err := jsonbody.Members([]byte(`{"Voting":"APPROVED","recordId":1}`))
	if err != nil || string(m["Voting"]) != `"APPROVED"` || string(m["recordId"]) != "1" || len(m) != 2 {
		t.Fatalf("Members = %v, %v", m, err)
	}
	_, err = jsonbody.Members([]byte(`{"a":1,"a":2}`))
	if err == nil || err.Error() != "a is given more than once; send each field once" {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err = jsonbody.Members([]byte(`null`)); err == nil {
		t.Fatal("null body accepted")
	}
}

func TestFieldName(t *testing.T) {
	for ptr, want := range map[jsontext.Pointer]string{
		"":                         "",
		"/count":                   "count",
		"/subjects/0/images_count": "subjects[0].images_count",
		"/batches/2/subjects/10/a": "batches[2].subjects[10].a",
		"/imagesIds/3":             "imagesIds[3]",
		"/config/product/id":       "config.product.id",
	} {
		if got := jsonbody.FieldName(ptr); got != want {
			t.Errorf("FieldName(%q) = %q, want %q", ptr, got, want)
		}
	}
}

func TestDecodeValueNamesFieldsFromItsField(t *testing.T) {
	var s string
	if err := jsonbody.DecodeValue("Voting", jsontext.Value(`5`), &s); err == nil || err.Error() != "Voting must be a string, not a number" {
		t.Fatalf("Voting 5: %v", err)
	}
	var subjects []subject
	err := jsonbody.DecodeValue("batches[2].subjects", jsontext.Value(`[{"product_ref":"p","Images_count":1}]`), &subjects)
	var e *jsonbody.Error
	if !errors.As(err, &e) || e.Field != "batches[2].subjects[0].Images_count" || !strings.Contains(e.Message, "did you mean images_count?") {
		t.Fatalf("nested: %v", err)
	}
	if err := jsonbody.DecodeValue("verdict", jsontext.Value(`"accepted"`), &s); err != nil || s != "accepted" {
		t.Fatalf("string: %q, %v", s, err)
	}
}

// A member or an array element sent as null is refused naming it, at any depth, unless its field
// is tagged nullable; below a free-form value (jsontext.Value, an interface) nulls are the
// caller's, so Members keeps them; a null inside a string is no null.
func TestDecodeRefusesNullsUnlessTheFieldIsNullable(t *testing.T) {
	for body, field := range map[string]string{
		`{"count":null}`:                                  "count",
		`{"ratio":null}`:                                  "ratio",
		`{"subjects":null}`:                               "subjects",
		`{"subjects":[{"product_ref":"a"},null]}`:         "subjects[1]",
		`{"subjects":[{"product_ref":null}]}`:             "subjects[0].product_ref",
		`{"config":{"product":{"id":null}}}`:              "config.product.id",
		`{"config":null}`:                                 "config",
		`{"imagesIds":["a",null]}`:                        "imagesIds[1]",
		`{"count":1,"config":{"product":null},"ratio":1}`: "config.product",
	} {
		var req request
		err := jsonbody.Decode([]byte(body), &req)
		var e *jsonbody.Error
		if !errors.As(err, &e) || e.Field != field || e.Message != field+" must not be null; leave the field out to keep it unchanged or use its default" {
			t.Errorf("Decode(%s) = %v, want a refusal naming %s", body, err, field)
		}
	}

	var timed struct {
		At *time.Time `json:"at"`
	}
	if err := jsonbody.Decode([]byte(`{"at":null}`), &timed); err == nil || !strings.HasPrefix(err.Error(), "at must not be null") {
		t.Errorf("a time sent as null = %v, want a refusal naming at", err)
	}
	var nullable struct {
		Threshold *int64         `json:"threshold" nullable:"true"`
		Free      any            `json:"free"`
		Raw       jsontext.Value `json:"raw"`
		Style     string         `json:"style"`
	}
	if err := jsonbody.Decode([]byte(`{"threshold":null,"free":{"a":null},"raw":null,"style":"null studio"}`), &nullable); err != nil {
		t.Errorf("a nullable field, free-form values and a string holding null: %v", err)
	}
	members, err := jsonbody.Members([]byte(`{"a":null,"b":1}`))
	if err != nil || members["a"].Kind() != 'n' {
		t.Errorf("Members keeps a null member: %v %v", members, err)
	}
	var s string
	if err := jsonbody.DecodeValue("voting", jsontext.Value(`null`), &s); err == nil || err.Error() != "voting must not be null; leave the field out to keep it unchanged or use its default" {
		t.Errorf("DecodeValue of null = %v, want a refusal naming voting", err)
	}
}
