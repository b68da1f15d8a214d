package idempotency

import (
	"bytes"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
)

// answerWriter holds back the answer of a route run under an Idempotency-Key until it is known
// whether the answer is remembered: the headers the route sets, its status and its body. Methods
// that do not write (Hijack, CloseNotify, Pusher) are the client writer's.
type answerWriter struct {
	gin.ResponseWriter
	header  http.Header
	status  int
	written bool
	body    bytes.Buffer
}

func newAnswerWriter(client gin.ResponseWriter) *answerWriter {
	return &answerWriter{ResponseWriter: client, header: http.Header{}, status: http.StatusOK}
}

// Header is the answer's own headers; those set before the route ran stay on the client writer.
func (w *answerWriter) Header() http.Header { return w.header }

// WriteHeader sets the status until the answer is written, as gin's writer does.
func (w *answerWriter) WriteHeader(code int) {
	if code > 0 && !w.written {
		w.status = code
	}
}

// WriteHeaderNow marks the answer written.
func (w *answerWriter) WriteHeaderNow() { w.written = true }

// Write appends to the body.
func (w *answerWriter) Write(b []byte) (int, error) {
	w.written = true
	return w.body.Write(b)
}

// WriteString appends to the body.
func (w *answerWriter) WriteString(s string) (int, error) {
	w.written = true
	return w.body.WriteString(s)
}

// Status is the answer's status.
func (w *answerWriter) Status() int { return w.status }

// Size is the body's length, -1 before anything was written (gin's convention).
func (w *answerWriter) Size() int {
	if !w.written {
		return -1
	}
	return w.body.Len()
}

// Written reports whether the answer was written.
func (w *answerWriter) Written() bool { return w.written }

// Flush does nothing: the answer is held back until writeTo.
func (w *answerWriter) Flush() {}

// recorded is the answer as a key remembers it.
func (w *answerWriter) recorded() engine.Answer {
	return engine.Answer{Status: w.status, Headers: w.header.Clone(), Body: bytes.Clone(w.body.Bytes())}
}

// writeTo sends the held-back answer to the client.
func (w *answerWriter) writeTo(client gin.ResponseWriter) {
	writeAnswer(client, w.recorded())
}

// writeAnswer writes an answer's headers, status and body.
func writeAnswer(client gin.ResponseWriter, answer engine.Answer) {
	for name, values := range answer.Headers {
		client.Header()[name] = append([]string(nil), values...)
	}
	client.WriteHeader(answer.Status)
	if len(answer.Body) == 0 {
		client.WriteHeaderNow()
		return
	}
	_, _ = client.Write(answer.Body)
}
