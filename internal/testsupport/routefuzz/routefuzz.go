// Package routefuzz turns a fuzzer's inputs into requests to the routes of a gin engine, so that
// the fuzz targets of both APIs (api/plugin and api/external) reach every route the same way: a
// route by its index, its path parameters, a raw query, one header line and the body.
package routefuzz

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

// Routes returns the engine's routes sorted by path and method, so that an index names the same
// route in every run.
func Routes(r *gin.Engine) []gin.RouteInfo {
	routes := r.Routes()
	slices.SortFunc(routes, func(a, b gin.RouteInfo) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Method, b.Method))
	})
	return routes
}

// Index returns the index of the route method path in routes; it panics when there is none.
func Index(routes []gin.RouteInfo, method, path string) uint8 {
	i := slices.IndexFunc(routes, func(r gin.RouteInfo) bool { return r.Method == method && r.Path == path })
	if i < 0 || i > 255 {
		panic("routefuzz: no route " + method + " " + path)
	}
	return uint8(i)
}

// Pick returns the route an input's route number names: any number names a route.
func Pick(routes []gin.RouteInfo, route uint8) gin.RouteInfo {
	return routes[int(route)%len(routes)]
}

// Request builds the request of one input to rt. Each path parameter takes the next of the
// "/"-separated params (the last one repeats), as the server would have decoded it from the URL;
// query is the raw query; header, "Name: value", is set over the defaults.
func Request(rt gin.RouteInfo, defaults http.Header, params, query, header string, body []byte) *http.Request {
	values := strings.Split(params, "/")
	segments := strings.Split(rt.Path, "/")
	n := 0
	for i, s := range segments {
		if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
			segments[i] = values[min(n, len(values)-1)]
			n++
		}
	}
	req, err := http.NewRequest(rt.Method, "http://shotflow.test/", bytes.NewReader(body))
	if err != nil {
		panic(err) // the method of a registered route and a fixed URL
	}
	req.URL.Path = strings.Join(segments, "/")
	req.URL.RawQuery = query
	req.RequestURI = req.URL.RequestURI()
	req.Header = defaults.Clone()
	if name, value, ok := strings.Cut(header, ":"); ok {
		req.Header[textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name))] = []string{strings.TrimPrefix(value, " ")}
	}
	return req
}

// Seed is one request of a fuzz target's corpus: the path parameters (separated by "/"), the raw
// query, one header line and the body.
type Seed struct{ Params, Query, Header, Body string }

// HostileText are the texts PostgreSQL refuses: the NUL character and three invalid UTF-8
// sequences (a stray byte, a truncated sequence and an encoded surrogate).
var HostileText = []string{"\x00", "\xff", "\xc3\x28", "\xed\xa0\x80"}

// Hostile returns seeds derived from s, a valid request of rt, each with one of HostileText in
// one place: the path parameters (when rt has any), the first query parameter (when s has a
// query), the header (when s has one) and each string of the JSON body, keys included. The
// texts take turns, so every one of them appears without multiplying the seeds.
func Hostile(rt gin.RouteInfo, s Seed) []Seed {
	var out []Seed
	n := 0
	next := func() string {
		n++
		return HostileText[(n-1)%len(HostileText)]
	}
	if strings.Contains(rt.Path, "/:") {
		v := s
		v.Params = next()
		out = append(out, v)
	}
	if name, value, ok := strings.Cut(s.Query, "="); ok {
		v := s
		v.Query = name + "=" + url.QueryEscape(next()) + value
		out = append(out, v)
	}
	if s.Header != "" {
		v := s
		v.Header = s.Header + next()
		out = append(out, v)
	}
	body := []byte(s.Body)
	dec := json.NewDecoder(bytes.NewReader(body))
	var prev int64
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		end := dec.InputOffset()
		if _, ok := tok.(string); ok {
			start := prev + int64(bytes.IndexByte(body[prev:end], '"'))
			literal := `"a` + next() + `"`
			if strings.Contains(literal, "\x00") {
				literal = `"a\u0000"` // a raw NUL is not JSON; its escape is
			}
			v := s
			v.Body = string(body[:start]) + literal + string(body[end:])
			out = append(out, v)
		}
		prev = end
	}
}
