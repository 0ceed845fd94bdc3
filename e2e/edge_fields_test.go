package e2e

// At the edge, through the real binaries: CDN-Cache-Control and the
// strata-targeted field (RFC 9213) decide storing; an origin's 103 Early
// Hints reach the client before the final response and are never stored;
// Expect: 100-continue works.

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEdgeCDNCacheControl: the sample origin's hdr= sends CDN-Cache-Control
// and Strata-Cache-Control; strata stores by the most targeted valid field,
// forwards CDN-Cache-Control and Cache-Control unchanged and drops its own
// field.
func TestEdgeCDNCacheControl(t *testing.T) {
	origin := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: origin.URL("origin")})
	for _, tc := range []struct {
		name, query string
		fetches     int    // origin fetches for two requests
		cc, cdncc   string // forwarded
	}{
		{"CDN-Cache-Control stores what Cache-Control forbids",
			"no-store&hdr=CDN-Cache-Control:max-age=600", 1, "no-store", "max-age=600"},
		{"CDN-Cache-Control forbids what Cache-Control allows",
			"max-age=600&hdr=CDN-Cache-Control:no-store", 2, "max-age=600", "no-store"},
		{"Strata-Cache-Control wins over both",
			"no-store&hdr=CDN-Cache-Control:no-store&hdr=Strata-Cache-Control:max-age=600", 1, "no-store", "no-store"},
		{"an invalid CDN-Cache-Control is ignored",
			"max-age=600&hdr=CDN-Cache-Control:no-store,", 1, "max-age=600", "no-store,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pq := "/obj/1k/cdncc?" + tc.query
			for i := range 2 {
				r := curl(t, s.URL+pq)
				if r.Exit != 0 || r.Status != 200 || len(r.Body) != 1024 {
					t.Fatalf("request %d: exit %d (%s) status %d, %d bytes", i, r.Exit, r.Stderr, r.Status, len(r.Body))
				}
				if got := r.Header.Get("Cache-Control"); got != tc.cc {
					t.Errorf("request %d: Cache-Control %q, want %q", i, got, tc.cc)
				}
				if got := r.Header.Get("Cdn-Cache-Control"); got != tc.cdncc {
					t.Errorf("request %d: CDN-Cache-Control %q, want %q", i, got, tc.cdncc)
				}
				if got := r.Header.Get("Strata-Cache-Control"); got != "" {
					t.Errorf("request %d: Strata-Cache-Control %q forwarded", i, got)
				}
			}
			if n := originCount(t, origin, pq); n != tc.fetches {
				t.Errorf("origin fetched %s %d times, want %d", pq, n, tc.fetches)
			}
		})
	}
}

// rawGet sends a GET of pq on a new connection to strata and returns the
// connection's reader; proto is "HTTP/1.1" or "HTTP/1.0".
func rawGet(t *testing.T, s *strata, proto, pq string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	_, _ = io.WriteString(c, "GET "+pq+" "+proto+"\r\nHost: example.com\r\n\r\n")
	return c, bufio.NewReader(c)
}

// TestEdgeEarlyHints: the origin sends a 103 (hint=) and takes a second
// more for its final response; the client leading the fill gets the 103,
// with the Link field only, before the final 200, which carries no Link.
// The hit after it gets no 103 (not stored), nor does an HTTP/1.0 client;
// curl reads through the 103 to the final response.
func TestEdgeEarlyHints(t *testing.T) {
	origin := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: origin.URL("origin"), Config: "edge:\n  early_hints: true\n"})
	const link = "</app.css>; rel=preload; as=style"
	pq := "/obj/1k/eh?max-age=600&delay=1s&hint=" + url.QueryEscape(link)

	_, br := rawGet(t, s, "HTTP/1.1", pq)
	start := time.Now()
	hints, err := http.ReadResponse(br, nil)
	if err != nil || hints.StatusCode != http.StatusEarlyHints {
		t.Fatalf("first response: %v %v, want 103", hints, err)
	}
	early := time.Since(start)
	if got := hints.Header.Values("Link"); len(got) != 1 || got[0] != link || len(hints.Header) != 1 {
		t.Fatalf("103 fields %v, want the Link alone", hints.Header)
	}
	final, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(final.Body)
	final.Body.Close()
	if final.StatusCode != 200 || len(body) != 1024 || final.Header.Get("Link") != "" {
		t.Fatalf("final %d, %d bytes, Link %q", final.StatusCode, len(body), final.Header.Get("Link"))
	}
	if late := time.Since(start); late-early < 500*time.Millisecond {
		t.Errorf("103 after %v, final after %v: the 103 did not come ahead of the origin's delay", early, late)
	}

	for _, proto := range []string{"HTTP/1.1", "HTTP/1.0"} {
		_, br := rawGet(t, s, proto, pq) // a hit
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
			t.Fatalf("%s hit: %v %v", proto, resp, err)
		}
	}
	_, br = rawGet(t, s, "HTTP/1.0", pq+"&n=10") // a miss for an HTTP/1.0 client
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("HTTP/1.0 miss: %v %v, want a 200 and no 103", resp, err)
	}
	if r := curl(t, s.URL+pq+"&n=11"); r.Exit != 0 || r.Status != 200 || len(r.Body) != 1024 {
		t.Fatalf("curl: exit %d (%s) status %d, %d bytes", r.Exit, r.Stderr, r.Status, len(r.Body))
	}
	if n := originCount(t, origin, pq); n != 1 {
		t.Errorf("origin fetched %s %d times, want 1", pq, n)
	}
	if n := metric(t, s.Admin, "strata_early_hints_total"); n != 2 {
		t.Errorf("strata_early_hints_total = %v, want 2 (the raw client and curl)", n)
	}
}

// TestEdgeEarlyHintsOff: by default (edge.early_hints false) the origin's
// 103 is dropped: the client's first response is the final 200.
func TestEdgeEarlyHintsOff(t *testing.T) {
	origin := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: origin.URL("origin")})
	_, br := rawGet(t, s, "HTTP/1.1", "/obj/1k/eh?max-age=600&hint=%3C%2Fa.css%3E%3B+rel%3Dpreload")
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("first response: %v %v, want the final 200", resp, err)
	}
}

// TestEdgeExpectContinue: a client that sends Expect: 100-continue with
// its body gets 100 Continue before it sends the body, then the origin's
// answer (POST passes through to the sample origin's /healthz); curl,
// which waits for the 100, gets the same.
func TestEdgeExpectContinue(t *testing.T) {
	origin := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: origin.URL("origin")})
	c, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	_, _ = io.WriteString(c, "POST /healthz HTTP/1.1\r\nHost: example.com\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("first line %q (%v), want 100 Continue before the body", line, err)
	}
	if blank, _ := br.ReadString('\n'); blank != "\r\n" {
		t.Fatalf("100 Continue followed by %q", blank)
	}
	_, _ = io.WriteString(c, "hello")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok\n" {
		t.Fatalf("final %d %q", resp.StatusCode, body)
	}

	f := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(f, []byte(strings.Repeat("x", 4096)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := curl(t, "-H", "Expect: 100-continue", "--expect100-timeout", "20", "--data-binary", "@"+f, s.URL+"/healthz")
	if r.Exit != 0 || r.Status != 200 || string(r.Body) != "ok\n" {
		t.Fatalf("curl: exit %d (%s) status %d %q", r.Exit, r.Stderr, r.Status, r.Body)
	}
}
