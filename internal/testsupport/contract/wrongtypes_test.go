package contract_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shotflow/shotflow/internal/testsupport/contract"
)

// WrongTypes covers every operation that takes a JSON body, and each request differs from a body
// of the right types only at its field.
func TestWrongTypesCoverEveryJSONBody(t *testing.T) {
	for _, tc := range []struct {
		doc    *contract.Document
		routes []string
		fields []string
	}{
		{contract.Plugin,
			[]string{"POST /jobs", "POST /jobs/batch", "POST /orders/{}/clone", "POST /assets/upload", "POST /packshots", "POST /images",
				"POST /webhook-endpoints", "PATCH /webhook-endpoints/{}", "POST /webhook-endpoints/{}/test", "POST /webhook-endpoints/{}/recover",
				"PUT /test/credits", "PUT /spend-limit", "PUT /alerts"},
			[]string{"subjects[0].images_count an integer", "session_config.style a string", "subjects[0].auto_register_packshot true or false",
				"size_bytes an integer", "images[0].product_metadata.sku a string", "batches an array", "available an integer",
				"monthly_credits an integer"}},
		{contract.External,
			[]string{"POST /models/register-ideas", "POST /sceneries/register-ideas", "POST /packshots/register-ideas",
				"POST /image-picker/register-ideas", "POST /video-picker/register-videos", "POST /reel/register-reel",
				"POST /packshots/update-packshot", "POST /image-picker/review",
				"POST /webhook-endpoints", "PATCH /webhook-endpoints/{}", "POST /webhook-endpoints/{}/test", "POST /webhook-endpoints/{}/recover",
				"PUT /test/credits", "PUT /spend-limit", "PUT /alerts"},
			[]string{"count an integer", "config.product.id a string", "imagesIds[0] a string", "Voting a string", "config an object",
				"events an array", "events[0] a string", "since a string", "available an integer", "monthlyCredits an integer"}},
	} {
		cases, err := tc.doc.WrongTypes()
		if err != nil {
			t.Fatal(err)
		}
		routes, fields := map[string]bool{}, map[string]bool{}
		for _, c := range cases {
			parts := strings.Split(c.Path, "/")
			for i, p := range parts {
				if len(p) == 36 && strings.Count(p, "-") == 4 {
					parts[i] = "{}"
				}
			}
			routes[c.Method+" "+strings.Join(parts, "/")] = true
			fields[c.Field+" "+c.Expected] = true
			var body map[string]any
			if err := json.Unmarshal(c.Body, &body); err != nil {
				t.Errorf("%s %s %s: body %s is not a JSON object", c.Method, c.Path, c.Field, c.Body)
			}
		}
		for _, r := range tc.routes {
			if !routes[r] {
				t.Errorf("no wrong-type request for %s (have %v)", r, routes)
			}
		}
		if len(routes) != len(tc.routes) {
			t.Errorf("wrong-type requests for %v, want exactly %v", routes, tc.routes)
		}
		for _, f := range tc.fields {
			if !fields[f] {
				t.Errorf("no wrong-type request for field %s", f)
			}
		}
	}
}

func TestGoInternal(t *testing.T) {
	if got := contract.GoInternal(`json: cannot unmarshal string into Go struct field UploadRequest.size_bytes of type int64`); got == "" {
		t.Error("encoding/json's message passes")
	}
	if got := contract.GoInternal("size_bytes must be an integer, not a string"); got != "" {
		t.Errorf("a plain message is said to show %q", got)
	}
}

// Nulls asks for null in every field but the ones the document marks nullable (PUT /alerts'
// low_balance_threshold in both documents), and building the cases leaves the document as it was:
// a field's null stays allowed for the validator afterwards.
func TestNullsSkipNullableFieldsAndLeaveTheDocument(t *testing.T) {
	for _, doc := range []*contract.Document{contract.Plugin, contract.External} {
		for range 2 { // the second round sees the document the first one left
			if _, err := doc.WrongTypes(); err != nil {
				t.Fatal(err)
			}
			cases, err := doc.Nulls()
			if err != nil {
				t.Fatal(err)
			}
			fields := map[string]bool{}
			for _, c := range cases {
				fields[c.Method+" "+c.Field] = true
				if c.Expected != "" {
					t.Errorf("%s %s: Expected %q, want none", c.Method, c.Field, c.Expected)
				}
			}
			if fields["PUT low_balance_threshold"] {
				t.Error("a null low_balance_threshold (nullable) is among the refusals")
			}
			if !fields["POST events"] || !fields["PUT available"] {
				t.Errorf("null cases miss fields that are not nullable: %v", fields)
			}
		}
		d, err := doc.Load()
		if err != nil {
			t.Fatal(err)
		}
		s := d.Paths.Value("/alerts").Put.RequestBody.Value.Content.Get("application/json").Schema.Value
		if typ := s.Properties["low_balance_threshold"].Value.Type; !typ.Includes("null") || typ.Includes("") {
			t.Errorf("the document's low_balance_threshold types are now %v", *typ)
		}
	}
}
