package plugin

import "testing"

// BenchmarkParseSession parses the body of a valid two-subject session, the way every POST /jobs
// does before anything else (docs/benchmarks.md, acceptance).
func BenchmarkParseSession(b *testing.B) {
	body := []byte(`{"job_type":"photo_shoot","session_config":{"aspect_ratio":"1:1","style":"warm"},` +
		`"subjects":[{"product_ref":"sku-1","images_count":5,"ai_model":"local/studio-v1"},` +
		`{"product_ref":"sku-2","product_label":"Blue mug","images_count":2,"ai_model":"local/studio-v1"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, f := parseSession(body); f != nil {
			b.Fatal(f.message)
		}
	}
}
