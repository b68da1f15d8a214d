package e2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/shotflow/shotflow/internal/testsupport/contract"
)

// client is a tiny HTTP client for the plugin or external API that fails the test on transport errors.
type client struct {
	t    *testing.T
	base string
	key  string
	// doc is the OpenAPI document the exchanges are checked against; nil means the plugin API's.
	doc *contract.Document
}

// do sends a request with a JSON body (nil for none) and decodes a JSON answer into out (nil to skip).
func (c *client) do(method, path string, body, out any) *http.Response {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("X-Api-Key", c.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	doc := c.doc
	if doc == nil {
		doc = contract.Plugin
	}
	doc.Check(c.t, req, nil, resp.StatusCode, resp.Header, data) // validates the exchange against the API's document
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
	return resp
}

// expect fails the test unless the response has the status.
func expect(t *testing.T, resp *http.Response, status int) {
	t.Helper()
	if resp.StatusCode != status {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: status %d, want %d: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, status, body)
	}
}

// readBody returns a response body as text.
func readBody(resp *http.Response) string {
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
