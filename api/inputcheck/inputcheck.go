// Package inputcheck is the edge check both APIs run on every route, around its authentication: a
// body larger than the route accepts is refused with 413 without reading the rest, and text
// PostgreSQL cannot store — the NUL character and invalid UTF-8 — is refused with 400 naming the
// field, wherever the service would read it: path and query parameters, the headers it looks
// records up with or stores, JSON bodies (keys and values) and multipart text fields and file
// names. JSON bodies and multipart text fields that nest deeper than MaxDepth are refused with 400
// as their bytes arrive, before anything decodes them. Each API turns a Refusal into its own error
// body. It is also where path IDs are read
// first: the UUID of an ID parameter (":id", ":<name>_id") sent in upper or mixed case is put in
// the lower case the store keeps IDs in (ids.Canonical), so every route matches IDs
// case-insensitively.
package inputcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/models/ids"
)

// Kind is how a route reads its request body.
type Kind int

// The kinds of body a route may take.
const (
	None      Kind = iota // no body; a body of at most the limit is read and ignored
	JSON                  // a JSON document, read in full here and scanned
	Multipart             // multipart/form-data, parsed here (large files go to temporary files)
	Stream                // raw bytes the handler streams (uploads); bounded here, not read
)

// Body declares the request body a route accepts: its kind and its largest size in bytes.
type Body struct {
	Kind  Kind
	Limit int64
}

// NoBodyLimit is the largest body a route that takes none accepts (and ignores), so that a
// client sending "{}" or an empty form is not refused.
const NoBodyLimit = 4 << 10

// NoBody declares a route that takes no body.
var NoBody = Body{Kind: None, Limit: NoBodyLimit}

// JSONBody declares a route that takes a JSON body of at most limit bytes.
func JSONBody(limit int64) Body { return Body{Kind: JSON, Limit: limit} }

// MultipartBody declares a route that takes a multipart/form-data body of at most limit bytes.
func MultipartBody(limit int64) Body { return Body{Kind: Multipart, Limit: limit} }

// StreamBody declares a route whose handler streams a body of at most limit bytes.
func StreamBody(limit int64) Body { return Body{Kind: Stream, Limit: limit} }

// multipartMemory is how much of a multipart body's files is kept in memory; the rest of the
// files is written to temporary files, removed when the request ends.
const multipartMemory = 4 << 20

// headers are the request headers the service looks records up with or stores; their values
// must be text PostgreSQL can take.
var headers = []string{"X-Api-Key", "Authorization", "Idempotency-Key"}

// Refusal is why a request is refused: 400 (the message names the field) or 413.
type Refusal struct {
	Status  int
	Message string
}

// Checks are the two halves of a route's input check, each a gin middleware that calls refuse
// (which must answer and abort) when the request cannot be served. Head runs first, before the
// key is checked: it reads no body, refusing one whose Content-Length is over the limit and text
// PostgreSQL cannot store in path and query parameters and in the headers the service looks
// records up with or stores (X-Api-Key, Authorization, Idempotency-Key). Content runs just before
// the handler: it reads and checks the body (so no caller without a valid key and permission
// makes the service read one), refusing it as soon as it passes the limit, and leaves a JSON or
// empty body buffered in the request, a multipart form parsed in Request.MultipartForm (its
// temporary files removed when the handler returns) or a streamed body wrapped so that it ends
// at the limit.
type Checks struct {
	Head, Content gin.HandlerFunc
}

// New returns the checks of a route that accepts body.
func New(body Body, refuse func(*gin.Context, *Refusal)) Checks {
	return Checks{
		Head: func(c *gin.Context) {
			if r := checkHead(c, body); r != nil {
				refuse(c, r)
			}
		},
		Content: func(c *gin.Context) {
			if r := checkContent(c, body); r != nil {
				refuse(c, r)
				return
			}
			c.Next()
			if form := c.Request.MultipartForm; form != nil {
				_ = form.RemoveAll()
			}
		},
	}
}

// checkHead is the check of Checks.Head: nil when the request may go on.
func checkHead(c *gin.Context, body Body) *Refusal {
	req := c.Request
	if req.ContentLength > body.Limit {
		return tooLarge(body.Limit)
	}
	for i, p := range c.Params {
		if r := text("The path parameter "+p.Key, p.Value); r != nil {
			return r
		}
		if isIDParam(p.Key) {
			c.Params[i].Value = ids.Canonical(p.Value)
		}
	}
	// A pair url.ParseQuery cannot read (a bad %-escape, a ';') would reach no handler: gin drops
	// it too, and the route would answer as though the parameter had not been sent.
	query, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		return invalid("The query string is malformed (%v): percent-encode a literal %% as %%25 and separate parameters with &.", err)
	}
	for _, name := range slices.Sorted(maps.Keys(query)) {
		if r := nameText("The name of a query parameter", name); r != nil {
			return r
		}
		for _, v := range query[name] {
			if r := text("The query parameter "+name, v); r != nil {
				return r
			}
		}
	}
	for _, name := range headers {
		for _, v := range req.Header.Values(name) {
			if r := text("The "+name+" header", v); r != nil {
				return r
			}
		}
	}
	return nil
}

// isIDParam reports whether a path parameter holds a record ID: "id" or "<name>_id". An
// "id_or_ref" may be a merchant reference, which is case-sensitive: the store tries it as an ID
// in canonical form, then as it is.
func isIDParam(key string) bool { return key == "id" || strings.HasSuffix(key, "_id") }

// checkContent is the check of Checks.Content: nil when the handler may run.
func checkContent(c *gin.Context, body Body) *Refusal {
	req := c.Request
	if req.Body == nil {
		req.Body = http.NoBody
	}
	switch body.Kind {
	case Stream:
		req.Body = http.MaxBytesReader(c.Writer, req.Body, body.Limit)
		return nil
	case Multipart:
		return checkForm(c, body.Limit)
	}
	data, r := read(req, body.Limit, body.Kind == JSON)
	if r != nil {
		return r
	}
	req.Body = io.NopCloser(bytes.NewReader(data))
	c.Set(bodyKey, data)
	if body.Kind == JSON {
		// A keyed request's body is hashed for its key (api/plugin's keyed): the scan keeps the
		// document it walks, so the body is not parsed again for the hash.
		keep := req.Header.Get("Idempotency-Key") != ""
		doc, r := checkJSON(data, keep)
		if r == nil && doc.ok {
			c.Set(documentKey, doc.value)
		}
		return r
	}
	return nil
}

// The gin context keys of what checkContent read: the body's bytes, and a keyed JSON body's
// document.
const (
	bodyKey     = "inputcheck.body"
	documentKey = "inputcheck.document"
)

// Bytes returns the request body the content check read and checked (a JSON body or one of a
// route without a body), so that a handler uses those bytes instead of reading a copy; ok is false
// when the check did not read it (multipart and streamed bodies).
func Bytes(c *gin.Context) (data []byte, ok bool) {
	v, ok := c.Get(bodyKey)
	data, ok2 := v.([]byte)
	return data, ok && ok2
}

// Document returns the JSON document of the body of a request with an Idempotency-Key, as the
// content check decoded it while it scanned the body (objects as map[string]any, arrays as []any,
// numbers as json.Number); ok is false when the request has no key, or its body is not exactly one
// JSON document.
func Document(c *gin.Context) (doc any, ok bool) {
	return c.Get(documentKey)
}

// checkJSON refuses a JSON body with text PostgreSQL cannot store: scanJSON names the string at
// fault; a body that is not valid UTF-8 elsewhere (outside its strings, or after a syntax error
// that ends the scan) is refused as a whole, so that no JSON route ever reads invalid UTF-8. With
// keep it returns the document the scan kept.
func checkJSON(data []byte, keep bool) (document, *Refusal) {
	doc, r := scanJSON(data, keep)
	if r != nil {
		return document{}, r
	}
	if !utf8.Valid(data) {
		return document{}, invalid("The body is not valid UTF-8.")
	}
	return doc, nil
}

// read reads the whole body, refusing it (413) as soon as it is longer than limit and, when
// isJSON, (400) as soon as it nests deeper than MaxDepth. Its buffer is the body's length when
// Content-Length gives it, else it doubles from 64 KiB up to the limit, so a body costs at most
// about twice the limit.
func read(req *http.Request, limit int64, isJSON bool) ([]byte, *Refusal) {
	var depth nesting
	size := min(limit, 64<<10)
	if req.ContentLength >= 0 {
		size = req.ContentLength // CheckHead refused a Content-Length over the limit
	}
	buf := make([]byte, 0, size)
	var probe [1]byte
	for {
		window := buf[len(buf):cap(buf)]
		switch {
		case len(buf) == int(limit):
			window = probe[:] // one byte more is one too many
		case len(window) == 0:
			bigger := make([]byte, len(buf), min(max(2*int64(cap(buf)), 512), limit))
			buf = bigger[:copy(bigger, buf)]
			window = buf[len(buf):cap(buf)]
		}
		n, err := req.Body.Read(window)
		if len(buf) == int(limit) && n > 0 {
			return nil, tooLarge(limit)
		}
		if isJSON && depth.feed(window[:n]) {
			return nil, tooDeep("The body")
		}
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, &Refusal{Status: http.StatusBadRequest, Message: "The request body could not be read."}
		}
	}
}

func tooLarge(limit int64) *Refusal {
	return &Refusal{Status: http.StatusRequestEntityTooLarge,
		Message: fmt.Sprintf("The request body is larger than this route accepts (%s).", Size(limit))}
}

// Size writes a byte count as people read it: "1 MiB", "64 KiB" or "100 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// formProblem says in plain words what is wrong with a body ParseMultipartForm refused, without
// Go's error text (its package and function names).
func formProblem(err error) string {
	switch {
	case errors.Is(err, http.ErrNotMultipart), errors.Is(err, http.ErrMissingBoundary):
		return "its Content-Type must be multipart/form-data with a boundary parameter"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), strings.Contains(err.Error(), "EOF"):
		return "it ends before its closing boundary"
	}
	return "it is not a well-formed multipart body (each part starts with --boundary and its headers, and the body ends with --boundary--)"
}

// checkForm parses a multipart body of at most limit bytes and checks its text fields and file
// names.
func checkForm(c *gin.Context, limit int64) *Refusal {
	req := c.Request
	req.Body = http.MaxBytesReader(c.Writer, req.Body, limit)
	if err := req.ParseMultipartForm(multipartMemory); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) || errors.Is(err, multipart.ErrMessageTooLarge) {
			return tooLarge(limit)
		}
		return &Refusal{Status: http.StatusBadRequest,
			Message: fmt.Sprintf("The body must be multipart/form-data of at most %s: %s.", Size(limit), formProblem(err))}
	}
	form := req.MultipartForm
	for _, name := range slices.Sorted(maps.Keys(form.Value)) {
		if r := nameText("The name of a form field", name); r != nil {
			return r
		}
		for _, v := range form.Value[name] {
			if r := text("The form field "+name, v); r != nil {
				return r
			}
			if r := textTooDeep(name, v); r != nil {
				return r
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(form.File)) {
		if r := nameText("The name of a form file", name); r != nil {
			return r
		}
		for _, fh := range form.File[name] {
			if r := text("The file name of form field "+name, fh.Filename); r != nil {
				return r
			}
		}
	}
	return nil
}

// text refuses a value that is not valid UTF-8 or that holds a NUL character; subject names it.
func text(subject, v string) *Refusal {
	switch {
	case !utf8.ValidString(v):
		return invalid("%s is not valid UTF-8.", subject)
	case strings.IndexByte(v, 0) >= 0:
		return invalid("%s must not contain the NUL character (\\u0000).", subject)
	}
	return nil
}

// nameText is text for a name that is itself refused: the message quotes it.
func nameText(subject, name string) *Refusal {
	if text("", name) == nil {
		return nil
	}
	return text(subject+" ("+strconv.Quote(name)+")", name)
}

func invalid(format string, args ...any) *Refusal {
	return &Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...)}
}

// frame is an object or array being scanned: the key of its current member, or the index of its
// current element; when the scan keeps the document, the members or elements so far.
type frame struct {
	array   bool
	key     string
	index   int
	wantKey bool
	object  map[string]any
	items   []any
}

// document is the JSON document a scan kept: ok when the body is exactly one valid document.
type document struct {
	value any
	ok    bool
}

// scanJSON checks every string of a JSON document, keys included, and names the first one that is
// not valid UTF-8 or holds a NUL character by its path (session_config.scenery_id,
// subjects[2].product_ref). A document that is not valid JSON is left to the handler, which
// refuses it with its own message. With keep it also builds the document from the tokens it walks
// (what a json.Decoder with UseNumber decodes into an any; a repeated key keeps its last value).
func scanJSON(data []byte, keep bool) (document, *Refusal) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []frame
	var prev int64
	var doc document
	roots := 0
	for {
		tok, err := dec.Token()
		if err != nil { // the end, or not JSON: the handler answers
			doc.ok = keep && err == io.EOF && roots == 1
			return doc, nil
		}
		// encoding/json replaces invalid UTF-8 in strings, so the token's raw bytes are checked.
		raw := data[prev:dec.InputOffset()]
		prev = dec.InputOffset()
		value := tok
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				f := frame{array: v == '[', wantKey: v == '{'}
				if keep && !f.array {
					f.object = map[string]any{}
				}
				if keep && f.array {
					f.items = []any{}
				}
				stack = append(stack, f)
				continue
			}
			closed := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if closed.array {
				value = closed.items
			} else {
				value = closed.object
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				if r := jsonText(raw, v, func() string {
					return "The key " + strconv.Quote(v) + " of " + orBody(jsonPath(stack[:n-1]), "the body")
				}); r != nil {
					return document{}, r
				}
				stack[n-1].key, stack[n-1].wantKey = v, false
				continue
			}
			if r := jsonText(raw, v, func() string { return orBody(jsonPath(stack), "The body") }); r != nil {
				return document{}, r
			}
		}
		// A value ended: the enclosing object expects a key, the enclosing array its next element.
		n := len(stack)
		switch {
		case n == 0:
			roots++
			doc.value = value
		case stack[n-1].array:
			if keep {
				stack[n-1].items = append(stack[n-1].items, value)
			}
			stack[n-1].index++
		default:
			if keep {
				stack[n-1].object[stack[n-1].key] = value
			}
			stack[n-1].wantKey = true
		}
	}
}

// jsonText refuses a JSON string whose raw bytes are not valid UTF-8 or whose value holds NUL;
// subject names it, built only for a refusal.
func jsonText(raw []byte, v string, subject func() string) *Refusal {
	if !utf8.Valid(raw) {
		return invalid("%s is not valid UTF-8.", subject())
	}
	if text("", v) != nil {
		return text(subject(), v)
	}
	return nil
}

// jsonPath names the current value of the innermost frame: session_config.scenery_id,
// subjects[2].product_ref; "" for the document itself.
func jsonPath(stack []frame) string {
	var b strings.Builder
	for _, f := range stack {
		if f.array {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(f.key)
	}
	return b.String()
}

func orBody(path, body string) string {
	if path == "" {
		return body
	}
	return path
}
