package proxy

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
)

// adminNode is a pair plus its Admin served on a loopback TCP listener.
type adminNode struct {
	*pair
	admin *Admin
	url   string
}

func newAdminNode(t *testing.T, tok string, peers ...string) *adminNode {
	t.Helper()
	p := newPair(t, taggedOrigin, func(o *Options) {
		o.PurgeToken = tok
		o.Peers = PeerOptions{URLs: peers, Timeout: time.Second, RetryFor: 3 * time.Second}
	})
	a := NewAdmin(p.srv, nil)
	t.Cleanup(a.Close)
	return &adminNode{pair: p, admin: a, url: serveAdmin(t, a.Handler, "")}
}

// serveAdmin serves h on addr (empty: a free loopback port) until the
// test ends and returns its base URL.
func serveAdmin(t *testing.T, h fasthttp.RequestHandler, addr string) string {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: h}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(); <-done })
	return "http://" + ln.Addr().String()
}

// freeAddr returns a loopback address nothing listens on (yet).
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// testClient dials with net.Dialer: fasthttp's default dialer leaves a
// process-wide goroutine behind.
var testClient = &fasthttp.Client{Dial: dialTCP(5 * time.Second)}

func purgeVia(t *testing.T, url, auth, args string) (int, purgeAnswer) {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url + "/purge?" + args)
	req.Header.SetMethod("POST")
	req.Header.Set("Authorization", auth)
	if err := testClient.DoTimeout(req, resp, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var ans purgeAnswer
	if err := json.Unmarshal(resp.Body(), &ans); err != nil {
		t.Fatalf("%s: %v", resp.Body(), err)
	}
	return resp.StatusCode(), ans
}

// TestClusterPurgeFanOut: a purge by URL, tag or prefix given to one node
// reaches its peer with the same token; the answer lists each peer; a
// peer that is down is retried in the background and delivered once it is up.
func TestClusterPurgeFanOut(t *testing.T) {
	late := freeAddr(t)
	b := newAdminNode(t, "t0k")
	a := newAdminNode(t, "t0k", b.url, "http://"+late)
	for _, tc := range []struct {
		name, args string
		path       string // cached on b before, must miss on b after
		status     int
	}{
		{"url", "url=http://example.com/plain", "/plain", 200},
		{"tag", "tag=red", "/red/1", 200},
		{"prefix", "prefix=http://example.com/img/", "/img/a", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.cached(tc.path)
			if !b.cached(tc.path) {
				t.Fatalf("%s not cached on b", tc.path)
			}
			b.clock.Advance(time.Second)
			a.clock.Advance(time.Second)
			status, ans := purgeVia(t, a.url, token, tc.args)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %+v", status, tc.status, ans)
			}
			if len(ans.Peers) != 2 || ans.Peers[0].Peer != b.url || ans.Peers[0].Status != 200 ||
				ans.Peers[1].Status != 0 || !ans.Peers[1].Retrying || ans.Peers[1].Error == "" {
				t.Fatalf("peers %+v", ans.Peers)
			}
			if b.cached(tc.path) {
				t.Fatalf("%s still cached on b after the purge on a", tc.path)
			}
		})
	}
	if n := testutil.ToFloat64(a.admin.peers.m.sent[peerOK]); n != 3 {
		t.Fatalf("a sent %v purges ok; want 3", n)
	}
	// The late peer comes up: the three queued purges reach it.
	got := make(chan string, 8)
	serveAdmin(t, func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Request.Header.Peek("Authorization")) == token && len(ctx.Request.Header.Peek(headerPurgeForwarded)) > 0 {
			got <- string(ctx.PostBody())
		}
		ctx.SetStatusCode(200)
	}, late)
	for range 3 {
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("queued purge not delivered to the peer that came up")
		}
	}
	waitFor(t, func() bool { return testutil.ToFloat64(a.admin.peers.m.retriedOK) == 3 })
	if n := testutil.ToFloat64(a.admin.peers.m.pending); n != 0 {
		t.Fatalf("%v retries still pending", n)
	}
}

// TestClusterPurgeNoForward: a purge that came from a peer is applied
// and not sent on.
func TestClusterPurgeNoForward(t *testing.T) {
	far := newAdminNode(t, "t0k")
	n := newAdminNode(t, "t0k", far.url)
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(n.url + "/purge?tag=red")
	req.Header.SetMethod("POST")
	req.Header.Set("Authorization", token)
	req.Header.Set(headerPurgeForwarded, "1")
	if err := testClient.DoTimeout(req, resp, 5*time.Second); err != nil || resp.StatusCode() != 200 {
		t.Fatalf("%v %d", err, resp.StatusCode())
	}
	var ans purgeAnswer
	_ = json.Unmarshal(resp.Body(), &ans)
	if len(ans.Peers) != 0 || testutil.ToFloat64(n.admin.peers.m.sent[peerOK]) != 0 {
		t.Fatalf("forwarded purge sent on: %+v", ans)
	}
}

// TestClusterPurgeResults: wrong token on a peer is reported, not
// retried; a peer down past RetryFor is given up and counted; a URL
// cached on no node is 404 fleet-wide.
func TestClusterPurgeResults(t *testing.T) {
	other := newAdminNode(t, "different")
	dead := "http://" + freeAddr(t)
	n := newAdminNode(t, "t0k", other.url, dead)
	status, ans := purgeVia(t, n.url, token, "url=http://example.com/nowhere")
	if status != 404 {
		t.Fatalf("status %d; want 404 (cached nowhere): %+v", status, ans)
	}
	if r := ans.Peers[0]; r.Status != 401 || r.Retrying || r.Error == "" {
		t.Fatalf("wrong-token peer: %+v", r)
	}
	if r := ans.Peers[1]; r.Status != 0 || !r.Retrying {
		t.Fatalf("dead peer: %+v", r)
	}
	waitFor(t, func() bool { return testutil.ToFloat64(n.admin.peers.m.givenUp) == 1 })
	if v := testutil.ToFloat64(n.admin.peers.m.pending); v != 0 {
		t.Fatalf("pending %v after giving up", v)
	}
	if v := testutil.ToFloat64(n.admin.peers.m.sent[peerFailed]); v < 3 {
		t.Fatalf("failed sends %v: want the first try and retries", v)
	}
}

func TestPeerOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		urls []string
		ok   bool
	}{
		{nil, true},
		{[]string{"http://10.0.0.12:9090", "https://n2.example:9443/"}, true},
		{[]string{"10.0.0.12:9090"}, false},
		{[]string{"http://10.0.0.12:9090/purge"}, false},
		{[]string{"ftp://x:1"}, false},
	} {
		o := PeerOptions{URLs: tc.urls}
		o.EnsureDefaults()
		if err := o.Validate(); (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.urls, err)
		}
	}
}

func TestFleetStatus(t *testing.T) {
	for _, tc := range []struct {
		name  string
		local int
		peers []int
		want  int
	}{
		{"found here", 200, []int{404, 0}, 200},
		{"found on a peer only", 404, []int{0, 200}, 200},
		{"found nowhere", 404, []int{404, 0}, 404},
		{"no peer answered", 404, []int{0, 503}, 404},
		{"not saved here", 500, []int{200}, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs []peerResult
			for _, s := range tc.peers {
				rs = append(rs, peerResult{Status: s})
			}
			if got := fleetStatus(tc.local, rs); got != tc.want {
				t.Fatalf("fleetStatus(%d, %v) = %d, want %d", tc.local, tc.peers, got, tc.want)
			}
		})
	}
}

func TestPurgeForm(t *testing.T) {
	got := string(purgeForm([]string{"http://a/x?y=1&z"}, []string{"t1", "t2"}, nil))
	if want := "tag=t1&tag=t2&url=http%3A%2F%2Fa%2Fx%3Fy%3D1%26z"; got != want {
		t.Fatalf("purgeForm = %q, want %q", got, want)
	}
}

// TestPeerRetriesBounded: with jobs queued faster than a dead peer takes
// them, at most maxPeerRetries wait in the retrier and as many in the
// queue; the rest are given up and counted, not held in memory.
func TestPeerRetriesBounded(t *testing.T) {
	p, err := newPeers(PeerOptions{URLs: []string{"http://127.0.0.1:1"}, Timeout: time.Second, RetryFor: time.Hour},
		func() string { return "token" }, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	now := time.Now()
	const n = 3 * maxPeerRetries
	for range n {
		p.enqueue(peerJob{peer: "http://127.0.0.1:1", body: []byte("url=/x"), next: now.Add(time.Hour),
			interval: time.Hour, deadline: now.Add(2 * time.Hour)})
		time.Sleep(time.Microsecond) // let the retrier take what it will
	}
	pending, givenUp := testutil.ToFloat64(p.m.pending), testutil.ToFloat64(p.m.givenUp)
	if pending > 2*maxPeerRetries || pending+givenUp != n || givenUp == 0 {
		t.Fatalf("pending %v, given up %v of %d: want at most %d pending, the rest given up", pending, givenUp, n, 2*maxPeerRetries)
	}
}

// TestPeerAnswerTooLong: a peer's answer longer than maxPeerAnswer still
// counts as delivered (status 200): the purge is not sent again.
func TestPeerAnswerTooLong(t *testing.T) {
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"pad":"` + strings.Repeat("x", 2*maxPeerAnswer) + `"}`))
	}))
	defer peer.Close()
	p, err := newPeers(PeerOptions{URLs: []string{peer.URL}, Timeout: 2 * time.Second, RetryFor: time.Hour},
		func() string { return "token" }, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	r := p.sendOne(peer.URL, []byte("url=/x"))
	if r.Status != 200 || r.Error != "" || retryable(r) {
		t.Fatalf("result %+v: want delivered with status 200", r)
	}
}
