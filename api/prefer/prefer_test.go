package prefer_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/prefer"
)

// The first wait preference counts, whole seconds from 1, clamped to 60; anything else is ignored.
func TestWaitReadsRFC7240Preferences(t *testing.T) {
	for _, c := range []struct {
		headers []string
		want    time.Duration
		ok      bool
	}{
		{nil, 0, false},
		{[]string{"wait=10"}, 10 * time.Second, true},
		{[]string{"WAIT = 7"}, 7 * time.Second, true},
		{[]string{`wait="5"`}, 5 * time.Second, true},
		{[]string{"respond-async, wait=3"}, 3 * time.Second, true},
		{[]string{"handling=lenient", "wait=4;foo=bar"}, 4 * time.Second, true},
		{[]string{"wait=61"}, 60 * time.Second, true},
		{[]string{"wait=999999999"}, 60 * time.Second, true},
		{[]string{"wait=9999999999"}, 60 * time.Second, true},
		{[]string{"wait=99999999999999999999999999"}, 60 * time.Second, true},
		{[]string{"wait=00000000000000000005"}, 5 * time.Second, true},
		{[]string{"wait=00000000000000000000"}, 0, false},
		{[]string{"wait=0"}, 0, false},
		{[]string{"wait=-1"}, 0, false},
		{[]string{"wait=1.5"}, 0, false},
		{[]string{"wait=abc"}, 0, false},
		{[]string{"wait"}, 0, false},
		{[]string{"wait="}, 0, false},
		{[]string{"wait=abc, wait=5"}, 0, false}, // the first wins, even invalid
		{[]string{"wait=2", "wait=9"}, 2 * time.Second, true},
		{[]string{"return=minimal"}, 0, false},
	} {
		h := http.Header{}
		for _, v := range c.headers {
			h.Add(prefer.HeaderPrefer, v)
		}
		got, ok := prefer.Wait(h)
		if got != c.want || ok != c.ok {
			t.Errorf("Prefer %q: %v %v, want %v %v", c.headers, got, ok, c.want, c.ok)
		}
	}
}
