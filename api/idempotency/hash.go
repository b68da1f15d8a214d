package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/models/ids"
)

// RequestHash is the hex SHA-256 of the canonical request: method, path and canonical JSON body.
func RequestHash(method, path string, body []byte) (string, error) {
	canon, err := canonicalJSON(body)
	if err != nil {
		return "", err
	}
	return canonicalHash(method, path, canon), nil
}

// canonicalHash is the hex SHA-256 of method, path and the canonical JSON body canon.
func canonicalHash(method, path string, canon []byte) string {
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\n%s\n", method, path)
	sum.Write(canon)
	return hex.EncodeToString(sum.Sum(nil))
}

// canonicalJSON re-encodes a JSON document with object keys sorted, no insignificant whitespace and
// numbers in their shortest form (2, 2.0 and 2e0 are the same). An empty body counts as {}. The body
// is parsed once: decoded, then refused if anything but space follows the document.
func canonicalJSON(body []byte) ([]byte, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return []byte("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("canonical JSON: the body is not one JSON document")
	}
	return canonicalDocument(v)
}

// canonicalDocument encodes a decoded JSON document (json.Number numbers) as canonicalJSON does.
func canonicalDocument(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(normalizeNumbers(v)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
	case json.Number:
		s := t.String()
		if !strings.ContainsAny(s, ".eE") {
			return t
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return t
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return v
}

// target is what a key's hash names of the request besides its body: the path, with the query
// string when there is one (its parameters sorted). A UUID in the path is named as the store keeps
// it (ids.Canonical), as the routes match UUIDs in either case: a retry that writes an ID in
// another case is the same request.
func target(c *gin.Context) string {
	r := c.Request
	segments := strings.Split(r.URL.Path, "/")
	for i, seg := range segments {
		if ids.IsUUID(seg) {
			segments[i] = ids.Canonical(seg)
		}
	}
	t := strings.Join(segments, "/")
	if q := r.URL.Query(); len(q) > 0 {
		t += "?" + q.Encode()
	}
	return t
}

// PayloadHash is the hash a key is bound to: RequestHash of the method, the path with the query
// string when there is one (its parameters sorted), and the body (nil for a route that takes
// none). The body is not parsed again: its document is the one the input check kept while it
// scanned it (inputcheck.Document). A body that is not one JSON document is hashed as it is: the
// route refuses it, which frees the key, and the hash still tells it apart from any other payload.
func PayloadHash(c *gin.Context, body []byte) string {
	method, target := c.Request.Method, target(c)
	if body != nil {
		if doc, ok := inputcheck.Document(c); ok {
			if canon, err := canonicalDocument(doc); err == nil {
				return canonicalHash(method, target, canon)
			}
		}
	}
	if hash, err := RequestHash(method, target, body); err == nil {
		return hash
	}
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\n%s\nraw\n", method, target)
	sum.Write(body)
	return hex.EncodeToString(sum.Sum(nil))
}

// formHash is the hash a key of a multipart route is bound to: the method, the path (as
// PayloadHash) and the form the input check parsed, as a canonical JSON document of its text
// fields (name to values, in the order sent) and its files (name to the file name, the part's
// Content-Type and the SHA-256 of the content of each, in the order sent). The boundary and the
// order of differently named parts, which a client's retry may change, do not count; any name,
// value, file name or byte does.
func formHash(c *gin.Context, form *multipart.Form) (string, error) {
	fields := map[string]any{}
	for name, values := range form.Value {
		list := make([]any, len(values))
		for i, v := range values {
			list[i] = v
		}
		fields[name] = list
	}
	files := map[string]any{}
	for name, headers := range form.File {
		list := make([]any, len(headers))
		for i, fh := range headers {
			sum, err := fileSum(fh)
			if err != nil {
				return "", fmt.Errorf("hash the form file %s: %w", name, err)
			}
			list[i] = map[string]any{"filename": fh.Filename, "content_type": fh.Header.Get("Content-Type"), "sha256": sum}
		}
		files[name] = list
	}
	canon, err := canonicalDocument(map[string]any{"multipart": map[string]any{"fields": fields, "files": files}})
	if err != nil {
		return "", err
	}
	return canonicalHash(c.Request.Method, target(c), canon), nil
}

// fileSum is the hex SHA-256 of a form file's content.
func fileSum(fh *multipart.FileHeader) (string, error) {
	f, err := fh.Open()
	if err != nil {
		return "", err
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}
