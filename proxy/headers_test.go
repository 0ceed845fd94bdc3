package proxy

import (
	"bufio"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

func TestHopByHopAndForwarded(t *testing.T) {
	var got http.Header
	var gotHost string
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		got, gotHost = r.Header.Clone(), r.Host
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Connection", "X-Secret")
		w.Header().Set("X-Secret", "1")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("Proxy-Authenticate", "Basic")
		w.Header().Set("Upgrade", "h2c")
		w.Header().Set("Alt-Svc", `h3=":443"`)
		w.Header().Set("Age", "3")
		w.Header().Set("X-End", "kept")
		_, _ = w.Write([]byte("ok"))
	}, nil)
	r := p.get("/hop", "Connection", "X-Client-Hop", "X-Client-Hop", "1", "Proxy-Authorization", "x",
		"TE", "trailers", "X-Forwarded-For", "10.0.0.1", "X-Keep", "yes", "Host", "example.com:8080")
	for _, h := range []string{"X-Client-Hop", "Proxy-Authorization", "Te"} {
		if v := got.Get(h); v != "" {
			t.Errorf("origin got hop-by-hop %s: %q", h, v)
		}
	}
	if got.Get("X-Keep") != "yes" {
		t.Errorf("end-to-end request header lost")
	}
	if v := got.Get("X-Forwarded-For"); !strings.HasPrefix(v, "10.0.0.1, ") {
		t.Errorf("X-Forwarded-For = %q", v)
	}
	if got.Get("X-Forwarded-Proto") != "http" || got.Get("X-Forwarded-Host") != "example.com:8080" {
		t.Errorf("X-Forwarded-Proto/Host = %q %q", got.Get("X-Forwarded-Proto"), got.Get("X-Forwarded-Host"))
	}
	if got.Get("Via") != "1.1 strata" || gotHost != "example.com:8080" {
		t.Errorf("Via %q, Host %q", got.Get("Via"), gotHost)
	}
	p.clock.Advance(2 * time.Second)
	for i, r := range []interface {
		Peek(string) []byte
	}{&r.Header, &p.get("/hop", "Host", "example.com:8080").Header} {
		for _, h := range []string{"X-Secret", "Keep-Alive", "Proxy-Authenticate", "Upgrade"} {
			if v := r.Peek(h); len(v) != 0 {
				t.Errorf("response %d carries hop-by-hop %s: %q", i, h, v)
			}
		}
		if string(r.Peek("X-End")) != "kept" {
			t.Errorf("response %d lost X-End", i)
		}
	}
	hit := p.get("/hop", "Host", "example.com:8080")
	expectHeader(t, hit, "Cache-Status", "strata; hit; detail=memory")
	expectHeader(t, hit, "Alt-Svc", "")
	expectHeader(t, hit, "Age", "5") // 3 from the origin + 2 in cache
}

func TestHostRouting(t *testing.T) {
	var hitsB, hostB = 0, ""
	p := newPair(t, cacheable("from A"), nil)
	b := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		hitsB++
		hostB = r.Host
		cacheable("from B")(w, r)
	}, nil)
	// Route p's proxy by the two-origin table (a reload swaps the origins).
	err := p.srv.Reload(Options{Origins: []OriginOptions{
		{URL: p.origin.URL, Default: true},
		{URL: b.origin.URL, Hosts: []string{"B.example"}, HostHeader: HostOrigin},
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := p.get("/r", "Host", "b.example:80")
	if string(r.Body()) != "from B" || hitsB != 1 {
		t.Fatalf("b.example: %q", r.Body())
	}
	if want := strings.TrimPrefix(b.origin.URL, "http://"); hostB != want {
		t.Errorf("HostOrigin: origin saw Host %q, want %q", hostB, want)
	}
	if r := p.get("/r", "Host", "other.example"); string(r.Body()) != "from A" {
		t.Fatalf("default: %q", r.Body())
	}
}

// TestDate: a hit carries the stored Date, not the time of sending
// (RFC 9110 §6.6.1, RFC 9111 §4.2.3: downstream caches compute the
// apparent age from it); a response that arrived without Date gets the
// time it was received, on the miss and on every later hit; the proxy's
// own errors carry one too.
func TestDate(t *testing.T) {
	const originDate = "Fri, 02 Jan 2026 03:03:05 GMT" // a minute before the test clock
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		switch r.URL.Path {
		case "/dated":
			w.Header().Set("Date", originDate)
		case "/undated":
			w.Header()["Date"] = nil // net/http adds one otherwise
		}
		_, _ = w.Write([]byte("body"))
	}, nil)
	committed := func() { waitFor(t, func() bool { return p.srv.nfills.Load() == 0 }) }
	received := httpDateString(p.clock.Now())

	r := p.get("/dated")
	expectHeader(t, r, "Date", originDate)
	r = p.get("/undated")
	expectHeader(t, r, "Date", received)
	committed()
	p.clock.Advance(90 * time.Second)
	for _, tc := range []struct{ path, want string }{{"/dated", originDate}, {"/undated", received}} {
		r = p.get(tc.path)
		expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
		expectHeader(t, r, "Date", tc.want)
		if n := len(r.Header.PeekAll("Date")); n != 1 {
			t.Errorf("%s: %d Date lines, want 1", tc.path, n)
		}
	}
	r = p.get("/nothing", "Cache-Control", "only-if-cached") // the proxy's own 504
	if r.StatusCode() != fasthttp.StatusGatewayTimeout {
		t.Fatalf("only-if-cached miss: %d", r.StatusCode())
	}
	if d := r.Header.PeekAll("Date"); len(d) != 1 { // fasthttp's own: the time of sending
		t.Errorf("the proxy's 504: Date lines %q, want one", d)
	}
}

func httpDateString(t time.Time) string { return string(fasthttp.AppendHTTPDate(nil, t)) }

// TestInstallDate: the Date goes in, the status code stays, junk is
// replaced by the current time, and nothing is allocated.
func TestInstallDate(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Fri, 02 Jan 2026 03:03:05 GMT", "Fri, 02 Jan 2026 03:03:05 GMT"},
		{"", ""},
		{"x\r\nSet-Cookie: a=b", ""},
		{strings.Repeat("9", 100), ""},
	} {
		var h fasthttp.ResponseHeader
		h.SetStatusCode(204)
		installDate(&h, []byte(tc.in))
		got := string(h.Peek("Date"))
		if h.StatusCode() != 204 || len(h.Peek("Set-Cookie")) > 0 {
			t.Errorf("installDate(%q): status %d, header %q", tc.in, h.StatusCode(), h.Header())
		}
		if h.ConnectionClose() {
			t.Errorf("installDate(%q) set Connection: close (keep-alive lost)", tc.in)
		}
		if tc.want != "" && got != tc.want {
			t.Errorf("installDate(%q): Date %q", tc.in, got)
		}
		if _, err := time.Parse(time.RFC1123, got); err != nil {
			t.Errorf("installDate(%q): Date %q is not an HTTP-date", tc.in, got)
		}
	}
	var h fasthttp.ResponseHeader
	date := []byte("Fri, 02 Jan 2026 03:03:05 GMT")
	if n := testing.AllocsPerRun(100, func() { h.SetStatusCode(200); installDate(&h, date) }); n != 0 && !raceEnabled {
		t.Errorf("installDate allocates %v times", n)
	}
}

// TestStoredNamesCanonical: copyResponseHeaders stores names in canonical
// case whatever case the origin's parser kept, and writeHeaders sends them
// as stored, leaving the header's own normalising as it found it.
func TestStoredNamesCanonical(t *testing.T) {
	var src fasthttp.ResponseHeader
	src.DisableNormalizing()
	if err := src.Read(bufioReader(strings.NewReader("HTTP/1.1 200 OK\r\nx-lower: 1\r\nETAG: \"e\"\r\nBad Name: 2\r\n\r\n"))); err != nil {
		t.Fatal(err)
	}
	kvs, _ := copyResponseHeaders(&src, 0)
	var names []string
	for _, kv := range kvs {
		names = append(names, string(kv.Key))
	}
	if got := strings.Join(names, ","); got != "Content-Type,X-Lower,Etag,Bad Name" {
		t.Fatalf("names %s", got)
	}
	for _, off := range []bool{false, true} {
		var dst fasthttp.ResponseHeader
		if off {
			dst.DisableNormalizing()
		}
		dst.SetStatusCode(200)
		writeHeaders(&dst, kvs)
		dst.Set("x-after", "3")
		h := string(dst.Header())
		want := "X-After: 3"
		if off {
			want = "x-after: 3"
		}
		if !strings.Contains(h, "X-Lower: 1\r\nEtag: \"e\"\r\nBad Name: 2\r\n") || !strings.Contains(h, want) {
			t.Fatalf("normalising off=%v:\n%s", off, h)
		}
	}
}

// TestOriginRequestNamesCanonical: the names prepareOriginRequest (and
// normalizeAcceptEncoding) look up and set with fasthttp's Canonical
// calls are as fasthttp normalises them; a name that is not would be
// missed in the client's request and sent in a case of its own.
func TestOriginRequestNamesCanonical(t *testing.T) {
	for _, name := range [][]byte{httpcache.HeaderConnection, httpcache.HeaderXForwardedFor,
		httpcache.HeaderXForwardedHost, httpcache.HeaderXForwardedProto, httpcache.HeaderAcceptEncoding} {
		if got := appendCanonicalName(nil, name); string(got) != string(name) {
			t.Errorf("%s is not canonical (%s)", name, got)
		}
	}
}

// TestAppendWireName: appendWireName appends what appendCanonicalName
// does and answers as wireName does on it, for names of every kind:
// canonical, in other cases, with bytes outside the token set, empty.
func TestAppendWireName(t *testing.T) {
	names := []string{"", "Etag", "ETAG", "x-lower", "Content-Type", "-a-", "a--b", "Bad Name", "X:Y", "a\rb", "b\n",
		"x-\x80", "Ab9_~"}
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "aZq-_9: \r\n\x80!"
	for range 2000 {
		b := make([]byte, r.IntN(7))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		names = append(names, string(b))
	}
	for _, name := range names {
		got, ok := appendWireName([]byte("pre"), []byte(name))
		want := appendCanonicalName([]byte("pre"), []byte(name))
		if string(got) != string(want) || ok != wireName(want[3:]) {
			t.Fatalf("appendWireName(%q) = %q, %v; want %q, %v", name, got, ok, want, wireName(want[3:]))
		}
	}
}

// TestFillRequestHeader: a fill's request keeps the client's fields but
// its conditionals, ranges, Content-Length and hop-by-hop fields, whatever
// case the client wrote them in (the server normalises names), is a GET,
// and carries the forwarding fields (prepareFillRequest).
func TestFillRequestHeader(t *testing.T) {
	s := benchServer(t, newMapStore())
	o := s.set.Load().router.pick([]byte("example.com"))
	raw := "HEAD /a HTTP/1.1\r\nHost: example.com\r\n"
	for _, kv := range [][2]string{
		{"User-Agent", "ua"}, {"if-none-match", `"x"`}, {"Accept", "*/*"}, {"RANGE", "bytes=0-1"},
		{"If-Modified-Since", "Tue, 01 Dec 2026 10:00:00 GMT"}, {"X-Custom", "1"}, {"If-Match", `"y"`},
		{"If-Unmodified-Since", "Tue, 01 Dec 2026 10:00:00 GMT"}, {"If-Range", `"z"`}, {"Content-Length", "0"},
		{"Accept-Encoding", "gzip"}, {"Connection", "keep-alive, X-Hop"}, {"X-Hop", "1"}, {"Te", "trailers"},
	} {
		raw += kv[0] + ": " + kv[1] + "\r\n"
	}
	ctx := requestCtx(t, raw+"\r\n")
	var req fasthttp.Request
	s.prepareFillRequest(&req, ctx, o)
	var got []string
	for k, v := range req.Header.All() {
		if string(k) == "Cdn-Loop" { // its node id is random
			v = nil
		}
		got = append(got, string(k)+": "+string(v))
	}
	slices.Sort(got)
	want := []string{"Accept-Encoding: gzip", "Accept: */*", "Cdn-Loop: ", "Host: example.com",
		`Surrogate-Capability: strata="Surrogate/1.0"`, "User-Agent: ua", "Via: 1.1 strata", "X-Custom: 1",
		"X-Forwarded-For: 192.0.2.7", "X-Forwarded-Host: example.com", "X-Forwarded-Proto: http"}
	if !slices.Equal(got, want) || string(req.Header.Method()) != fasthttp.MethodGet {
		t.Errorf("%s %q, want GET %q", req.Header.Method(), got, want)
	}
}

// TestPassRequestHeader: a passed request (prepareOriginRequest) keeps the
// client's conditionals and ranges, which only a shared fill drops, and
// loses its hop-by-hop fields.
func TestPassRequestHeader(t *testing.T) {
	s := benchServer(t, newMapStore())
	o := s.set.Load().router.pick([]byte("example.com"))
	ctx := requestCtx(t, "GET /a HTTP/1.1\r\nHost: example.com\r\nRange: bytes=0-1\r\nIf-None-Match: \"x\"\r\n"+
		"Connection: X-Hop\r\nX-Hop: 1\r\n\r\n")
	var req fasthttp.Request
	ctx.Request.CopyTo(&req)
	s.prepareOriginRequest(&req, ctx, o)
	if string(req.Header.Peek("Range")) != "bytes=0-1" || string(req.Header.Peek("If-None-Match")) != `"x"` ||
		len(req.Header.Peek("X-Hop")) > 0 {
		t.Errorf("origin request:\n%s", req.Header.Header())
	}
}

// requestCtx is a RequestCtx holding the request raw, from 192.0.2.7.
func requestCtx(tb testing.TB, raw string) *fasthttp.RequestCtx {
	var ctx fasthttp.RequestCtx
	ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 40000}, nil)
	if err := ctx.Request.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		tb.Fatal(err)
	}
	return &ctx
}

// BenchmarkFillRequestHeader builds a fill's request from a
// browser-like request of eight fields without conditionals.
func BenchmarkFillRequestHeader(b *testing.B) {
	s := benchServer(b, newMapStore())
	o := s.set.Load().router.pick([]byte("example.com"))
	raw := "GET /static/app.js HTTP/1.1\r\nHost: example.com\r\n"
	for _, kv := range [][2]string{
		{"User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"},
		{"Accept", "*/*"}, {"Accept-Language", "en-GB,en;q=0.5"}, {"Accept-Encoding", "gzip, deflate, br, zstd"},
		{"Referer", "https://example.com/"}, {"Sec-Fetch-Mode", "no-cors"}, {"Connection", "keep-alive"},
	} {
		raw += kv[0] + ": " + kv[1] + "\r\n"
	}
	ctx := requestCtx(b, raw+"\r\n")
	var req fasthttp.Request
	b.ReportAllocs()
	for b.Loop() {
		req.Reset()
		s.prepareFillRequest(&req, ctx, o)
	}
}
