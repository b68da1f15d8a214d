package plugin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHeadOfAnOrderStreamDoesNotHoldTheConnection: every GET route answers HEAD with the headers
// of its GET and no body. For GET /orders/{id}/events of an order in progress the GET is a stream
// that lasts until the order ends (or 15 minutes), holding one of the key's stream slots: its HEAD
// answers the stream's headers and holds nothing, so a keep-alive client's next request on the
// same connection is answered at once.
func TestHeadOfAnOrderStreamDoesNotHoldTheConnection(t *testing.T) {
	e := newEnv(t).committing()
	srv := httptest.NewServer(e.router)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	base := srv.URL
	t.Cleanup(e.handler.Engine.Feed.Stop) // runs first: ends the stream the HEAD left running
	s, _ := e.twoJobSession()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	t.Cleanup(client.CloseIdleConnections)

	head, err := http.NewRequest(http.MethodHead, base+p("/orders/"+s.OrderID+"/events"), nil)
	require.NoError(t, err)
	head.Header.Set("X-Api-Key", e.key)
	res, err := client.Do(head)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	get, err := http.NewRequestWithContext(ctx, http.MethodGet, base+p("/orders/"+s.OrderID), nil)
	require.NoError(t, err)
	get.Header.Set("X-Api-Key", e.key)
	start := time.Now()
	res, err = client.Do(get)
	require.NoError(t, err, "the request after a HEAD of the stream was not answered in %s", time.Since(start).Round(time.Millisecond))
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
}

// A HEAD holds nothing open: its `Prefer: wait` is dropped, so it answers at once, without the
// Preference-Applied a held GET answers with.
func TestHeadWithPreferWaitIsNotHeld(t *testing.T) {
	e := newEnv(t).committing()
	srv := httptest.NewServer(e.router)
	t.Cleanup(srv.Close)
	t.Cleanup(e.handler.Engine.Feed.Stop)
	s, _ := e.twoJobSession()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	head, err := http.NewRequestWithContext(ctx, http.MethodHead, srv.URL+p("/orders/"+s.OrderID), nil)
	require.NoError(t, err)
	head.Header.Set("X-Api-Key", e.key)
	head.Header.Set("Prefer", "wait=30")
	res, err := srv.Client().Do(head)
	require.NoError(t, err, "a HEAD with Prefer: wait=30 was held")
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Empty(t, res.Header.Get("Preference-Applied"))
}
