package apitest

import (
	"strings"

	"github.com/gin-gonic/gin"
)

// HostileText is a text PostgreSQL refuses to store, in the three forms a request carries it.
type HostileText struct {
	Path string // percent-encoded, for a path segment or a query value
	JSON string // as the content of a JSON string
	Want string // what the refusal says of the field
}

// HostileTexts are the NUL character and three invalid UTF-8 sequences (a stray byte, a truncated
// sequence and an encoded surrogate).
var HostileTexts = []HostileText{
	{"%00", `\u0000`, "must not contain the NUL character"},
	{"%ff", "\xff", "is not valid UTF-8"},
	{"%c3%28", "\xc3\x28", "is not valid UTF-8"},
	{"%ed%a0%80", "\xed\xa0\x80", "is not valid UTF-8"},
}

// ParamTarget is a route whose :param segments all carry one bad value.
type ParamTarget struct {
	Method string
	Route  string // the route's template, e.g. /orders/:id
	Param  string // the name of the route's first parameter
	Target string // the route with every :param segment replaced
}

// WithBadParams returns, for each route that has a :param segment, the route with the value in
// every :param segment. Routes without one are left out. routes is what a gin router's Routes()
// lists.
func WithBadParams(routes gin.RoutesInfo, value string) []ParamTarget {
	var out []ParamTarget
	for _, r := range routes {
		first := strings.Index(r.Path, "/:")
		if first < 0 {
			continue
		}
		name, _, _ := strings.Cut(r.Path[first+2:], "/")
		segments := strings.Split(r.Path, "/")
		for i, s := range segments {
			if strings.HasPrefix(s, ":") {
				segments[i] = value
			}
		}
		out = append(out, ParamTarget{Method: r.Method, Route: r.Path, Param: name, Target: strings.Join(segments, "/")})
	}
	return out
}
