package inputcheck

import "fmt"

// MaxDepth is how deeply a JSON body's objects and arrays may nest, and the brackets of a
// multipart text field. Every request schema of both APIs is a few levels deep; the limit keeps
// the work on a hostile body (an object nested a hundred thousand levels costs a JSON decoder
// time that grows faster than its size) out of reach: such a body is refused as its bytes arrive,
// before anything decodes it.
const MaxDepth = 32

// nesting follows how deeply JSON text nests as its bytes arrive: each { or [ outside a string
// opens a level and each } or ] closes one. It does not validate the text; the decoders do, on
// text that nesting has let through.
type nesting struct {
	depth    int
	inString bool
	escaped  bool
}

// feed scans the next bytes of the text and reports whether it now nests deeper than MaxDepth.
func (n *nesting) feed(p []byte) bool {
	for _, b := range p {
		if n.inString {
			switch {
			case n.escaped:
				n.escaped = false
			case b == '\\':
				n.escaped = true
			case b == '"':
				n.inString = false
			}
			continue
		}
		switch b {
		case '"':
			n.inString = true
		case '{', '[':
			if n.depth++; n.depth > MaxDepth {
				return true
			}
		case '}', ']':
			if n.depth > 0 {
				n.depth--
			}
		}
	}
	return false
}

// tooDeep is the refusal of text that nests deeper than MaxDepth; subject names it.
func tooDeep(subject string) *Refusal {
	return invalid("%s nests objects and arrays more than %d levels deep.", subject, MaxDepth)
}

// textTooDeep refuses a multipart text field whose brackets nest deeper than MaxDepth.
func textTooDeep(name, v string) *Refusal {
	var n nesting
	if n.feed([]byte(v)) {
		return tooDeep(fmt.Sprintf("The form field %s", name))
	}
	return nil
}
