package eventstream_test

import (
	"net/http"
	"testing"

	"github.com/shotflow/shotflow/api/eventstream"
)

// Last-Event-ID is a whole number; none (or an empty one) resumes from the start.
func TestLastEventID(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   int64
		err    bool
	}{
		{nil, 0, false},
		{[]string{""}, 0, false},
		{[]string{"0"}, 0, false},
		{[]string{"42"}, 42, false},
		{[]string{" 7 "}, 7, false},
		{[]string{"-1"}, 0, true},
		{[]string{"+1"}, 0, true},
		{[]string{"1.0"}, 0, true},
		{[]string{"abc"}, 0, true},
		{[]string{"99999999999999999999"}, 0, true},
		{[]string{"1", "2"}, 0, true},
	} {
		h := http.Header{}
		for _, v := range c.values {
			h.Add(eventstream.HeaderLastEventID, v)
		}
		got, err := eventstream.LastEventID(h)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("Last-Event-ID %q: %d %v, want %d (error %v)", c.values, got, err, c.want, c.err)
		}
	}
}
