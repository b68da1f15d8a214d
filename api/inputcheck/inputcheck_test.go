package inputcheck_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/inputcheck"
)

// answer is what the test router answers: the refusal, or what the handler saw.
type answer struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
	Body    []byte `json:"body"` // the body the handler read (JSON and no-body routes)
	Fields  string `json:"fields"`
}

// counting is a request body that makes its bytes on demand and counts those read.
type counting struct {
	prefix string
	size   int64
	read   int64
}

func (b *counting) Read(p []byte) (int, error) {
	if b.read >= b.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), b.size-b.read))
	for i := range n {
		pos := b.read + int64(i)
		if pos < int64(len(b.prefix)) {
			p[i] = b.prefix[pos]
		} else {
			p[i] = 'x'
		}
	}
	b.read += int64(n)
	return n, nil
}

// router serves /x/:id with body, and /stream/:id with a streamed body of the same limit.
func router(body inputcheck.Body) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	refuse := func(c *gin.Context, ref *inputcheck.Refusal) {
		c.AbortWithStatusJSON(ref.Status, answer{Status: ref.Status, Message: ref.Message})
	}
	in := inputcheck.New(body, refuse)
	r.Handle(http.MethodPost, "/x/:id", in.Head, in.Content, func(c *gin.Context) {
		if body.Kind == inputcheck.Multipart {
			form, err := c.MultipartForm()
			if err != nil {
				c.JSON(http.StatusTeapot, answer{Message: err.Error()})
				return
			}
			c.JSON(http.StatusOK, answer{Fields: strings.Join(form.Value["name"], ",")})
			return
		}
		data, err := io.ReadAll(c.Request.Body)
		if err != nil {
			c.JSON(http.StatusTeapot, answer{Message: err.Error()})
			return
		}
		c.JSON(http.StatusOK, answer{Body: data})
	})
	stream := inputcheck.New(inputcheck.StreamBody(body.Limit), refuse)
	r.Handle(http.MethodPut, "/stream/:id", stream.Head, stream.Content, func(c *gin.Context) {
		n, err := io.Copy(io.Discard, c.Request.Body)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			c.JSON(http.StatusRequestEntityTooLarge, answer{Message: err.Error()})
			return
		}
		c.JSON(http.StatusOK, answer{Body: bytes.Repeat([]byte("x"), int(n))})
	})
	return r
}

func serve(t *testing.T, r *gin.Engine, req *http.Request) answer {
	t.Helper()
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	var a answer
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		t.Fatalf("%s %s: answer %q is not JSON", req.Method, req.URL, rec.Body.String())
	}
	a.Status = rec.Code
	return a
}

func post(path, contentType, body string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	return req
}

// refused checks the status and that the message contains want.
func refused(t *testing.T, a answer, status int, want string) {
	t.Helper()
	if a.Status != status || !strings.Contains(a.Message, want) {
		t.Errorf("answer %d %q, want %d containing %q", a.Status, a.Message, status, want)
	}
}

func TestJSONStringsNameTheirPath(t *testing.T) {
	r := router(inputcheck.JSONBody(1 << 10))
	for body, want := range map[string]string{
		`{"filename":"a\u0000b"}`:                                     "filename must not contain the NUL character",
		`{"session_config":{"style":"x","scenery_id":"\u0000"}}`:      "session_config.scenery_id must not contain the NUL character",
		`{"subjects":[{"product_ref":"a"},{"product_ref":"\u0000"}]}`: "subjects[1].product_ref must not contain",
		`{"a":[1,[true,null,"x"],{"b":[{}, "\u0000"]}]}`:              "a[2].b[1] must not contain",
		`{"session_config":{"scenery\u0000":1}}`:                      `The key "scenery\x00" of session_config must not contain`,
		`{"x\u0000":1}`:                                               `The key "x\x00" of the body must not contain`,
		"{\"filename\":\"\xff\"}":                                     "filename is not valid UTF-8",
		"{\"filename\":\"ok\",\"industry\":\"\xc3\x28\"}":             "industry is not valid UTF-8",
		"{\"suggestion\":\"\xed\xa0\x80\"}":                           "suggestion is not valid UTF-8",
		"{\"\xff\":1}":                                                "of the body is not valid UTF-8",
		`"\u0000"`:                                                    "The body must not contain",
		`{} {"preferences":"\u0000"}`:                                 "preferences must not contain",
	} {
		refused(t, serve(t, r, post("/x/1", "application/json", body)), http.StatusBadRequest, want)
	}
}

// A JSON body that is not valid UTF-8 outside the strings the scan names (after a syntax error
// that ends the scan, after the value, between tokens) is refused as a whole.
func TestJSONBodyMustBeValidUTF8(t *testing.T) {
	r := router(inputcheck.JSONBody(1 << 10))
	for _, body := range []string{
		"{\"broken\": \"\xff",
		"{\"a\":1} \xff",
		"{\"a\":\xfe}",
		"\xef\xbb\xbf\xff",
		"[1,\xc3\x28]",
	} {
		refused(t, serve(t, r, post("/x/1", "application/json", body)), http.StatusBadRequest, "The body is not valid UTF-8.")
	}
}

func TestJSONTextPassesUnchanged(t *testing.T) {
	r := router(inputcheck.JSONBody(1 << 10))
	for _, body := range []string{
		`{"name":"Café \u00e9 \ud83d\ude00 日本","n":1e999,"list":[1,2,{"k":"v"}],"t":true,"z":null}`,
		`{"lone":"\ud800"}`, // decoded as U+FFFD, which PostgreSQL stores
		"{\"broken\": \"x",  // not JSON: the handler refuses it in its own words
		`{"a":`,
		``,
		"not json \x00 at all",
	} {
		a := serve(t, r, post("/x/1", "application/json", body))
		if a.Status != http.StatusOK || string(a.Body) != body {
			t.Errorf("body %q: answer %d %q, handler read %q; want it passed on unchanged", body, a.Status, a.Message, a.Body)
		}
	}
}

func TestParametersAndHeaders(t *testing.T) {
	r := router(inputcheck.NoBody)
	for _, c := range []struct {
		target, header, value, want string
	}{
		{"/x/%00", "", "", "The path parameter id must not contain the NUL character"},
		{"/x/a%ff", "", "", "The path parameter id is not valid UTF-8"},
		{"/x/%c3%28", "", "", "The path parameter id is not valid UTF-8"},
		{"/x/%ed%a0%80", "", "", "The path parameter id is not valid UTF-8"},
		{"/x/1?cursor=%00", "", "", "The query parameter cursor must not contain"},
		{"/x/1?limit=1&status=%ff", "", "", "The query parameter status is not valid UTF-8"},
		{"/x/1?%ff=1", "", "", `The name of a query parameter ("\xff") is not valid UTF-8`},
		{"/x/1", "Idempotency-Key", "\xff", "The Idempotency-Key header is not valid UTF-8"},
		{"/x/1", "Idempotency-Key", "a\x00", "The Idempotency-Key header must not contain"},
		{"/x/1", "X-Api-Key", "pk_live_\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00.s", "The X-Api-Key header must not contain"},
		{"/x/1", "Authorization", "Bearer \xc3\x28", "The Authorization header is not valid UTF-8"},
	} {
		req := httptest.NewRequest(http.MethodPost, c.target, nil)
		if c.header != "" {
			req.Header.Set(c.header, c.value)
		}
		refused(t, serve(t, r, req), http.StatusBadRequest, c.want)
	}
	// Other headers (not stored) may carry any bytes; text that is fine passes.
	req := httptest.NewRequest(http.MethodPost, "/x/caf%C3%A9?q=%E2%82%AC&q=2", nil)
	req.Header.Set("User-Agent", "\xff")
	req.Header.Set("Idempotency-Key", "clé-1")
	if a := serve(t, r, req); a.Status != http.StatusOK {
		t.Errorf("clean request: %d %q", a.Status, a.Message)
	}
}

// multipartBody builds a form with the text fields (name, value pairs) and one file.
func multipartBody(t *testing.T, fields []string, fileField, fileName string, file []byte) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		part, err := w.CreateFormField(fields[i])
		if err != nil {
			t.Fatal(err)
		}
		part.Write([]byte(fields[i+1]))
	}
	if fileField != "" {
		// The file name is percent-encoded (RFC 7578, 2231), as a raw NUL cannot be in a header.
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+fileField+`"; filename*=UTF-8''`+url.PathEscape(fileName))
		h.Set("Content-Type", "image/png")
		part, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		part.Write(file)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), buf.String()
}

func TestMultipartFields(t *testing.T) {
	r := router(inputcheck.MultipartBody(64 << 10))
	for _, c := range []struct {
		fields          []string
		fileField, file string
		status          int
		want            string
	}{
		{[]string{"name", "a\x00b"}, "", "", http.StatusBadRequest, "The form field name must not contain the NUL character"},
		{[]string{"name", "ok", "sku", "\xff"}, "", "", http.StatusBadRequest, "The form field sku is not valid UTF-8"},
		{[]string{"na\xffme", "x"}, "", "", http.StatusBadRequest, "The name of a form field"},
		{[]string{"name", "ok"}, "image", "p\x00.png", http.StatusBadRequest, "The file name of form field image must not contain"},
		{[]string{"name", "ok"}, "image", "\xc3\x28.png", http.StatusBadRequest, "The file name of form field image is not valid UTF-8"},
		{[]string{"name", "ok"}, "image", "photo.png", http.StatusOK, ""},
		{[]string{"name", strings.Repeat("v", 64<<10)}, "", "", http.StatusRequestEntityTooLarge, "larger than this route accepts (64 KiB)"},
	} {
		ct, body := multipartBody(t, c.fields, c.fileField, c.file, []byte("bytes"))
		a := serve(t, r, post("/x/1", ct, body))
		refused(t, a, c.status, c.want)
		if c.status == http.StatusOK && a.Fields != "ok" {
			t.Errorf("the handler saw name=%q, want the parsed form", a.Fields)
		}
	}
	refused(t, serve(t, r, post("/x/1", "application/json", `{}`)), http.StatusBadRequest, "multipart/form-data")
}

// TestLimits checks that a body over the limit is refused with 413 without reading further: not
// at all when Content-Length says so, and no further than the limit when it is sent in chunks.
func TestLimits(t *testing.T) {
	const limit = 64 << 10
	for _, kind := range []struct {
		name   string
		body   inputcheck.Body
		prefix string
		ct     string
	}{
		{"none", inputcheck.NoBody, "", "application/json"},
		{"json", inputcheck.JSONBody(limit), `{"style":"`, "application/json"},
		{"multipart", inputcheck.MultipartBody(limit),
			"--b\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n",
			"multipart/form-data; boundary=b"},
	} {
		r := router(kind.body)
		max := kind.body.Limit
		for _, chunked := range []bool{false, true} {
			body := &counting{prefix: kind.prefix, size: 64 << 20}
			req := httptest.NewRequest(http.MethodPost, "/x/1", body)
			req.Header.Set("Content-Type", kind.ct)
			req.ContentLength = max + 1
			if chunked {
				req.ContentLength = -1
			}
			a := serve(t, r, req)
			refused(t, a, http.StatusRequestEntityTooLarge, "larger than this route accepts ("+inputcheck.Size(max)+")")
			switch {
			case !chunked && body.read != 0:
				t.Errorf("%s: read %d bytes of a body whose Content-Length is over the limit", kind.name, body.read)
			case chunked && body.read > max+1:
				t.Errorf("%s: read %d bytes of a chunked body, more than the limit %d", kind.name, body.read, max)
			}
		}
		// At the limit exactly, the body is accepted.
		if kind.body.Kind != inputcheck.Multipart {
			body := strings.Repeat("x", int(max))
			if a := serve(t, r, post("/x/1", kind.ct, body)); a.Status != http.StatusOK || len(a.Body) != int(max) {
				t.Errorf("%s: a body of exactly the limit: %d %q", kind.name, a.Status, a.Message)
			}
		}
	}
	// A streamed body is left to the handler, which cannot read past the limit.
	r := router(inputcheck.NoBody)
	body := &counting{size: 64 << 20}
	req := httptest.NewRequest(http.MethodPut, "/stream/1", body)
	req.ContentLength = -1
	refused(t, serve(t, r, req), http.StatusRequestEntityTooLarge, "request body too large")
	if body.read > inputcheck.NoBodyLimit+1 {
		t.Errorf("stream: read %d bytes, limit %d", body.read, inputcheck.NoBodyLimit)
	}
	req = httptest.NewRequest(http.MethodPut, "/stream/1", strings.NewReader("abc"))
	if a := serve(t, r, req); a.Status != http.StatusOK || string(a.Body) != "xxx" {
		t.Errorf("stream under the limit: %d %q", a.Status, a.Message)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{1 << 20: "1 MiB", 141 << 20: "141 MiB", 4 << 10: "4 KiB", 1536: "1536 bytes", 100: "100 bytes", 1<<20 + 1: "1048577 bytes"} {
		if got := inputcheck.Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
