package e2e

// Origins whose response headers are large, through the real binary:
// origins[].max_header_bytes (default 64KiB) bounds them, a block over it
// is a 502 naming the cause, asked for once.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// headerOrigin is a raw HTTP/1.1 origin on loopback: for a request to
// /fields/N it answers a cacheable "hi" carrying N header fields of 400
// bytes each, then closes the connection. It counts requests by path.
type headerOrigin struct {
	URL   string
	mu    sync.Mutex
	count map[string]int
}

func startHeaderOrigin(t *testing.T) *headerOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &headerOrigin{URL: "http://" + ln.Addr().String(), count: map[string]int{}}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.serve(c)
		}
	}()
	return o
}

func (o *headerOrigin) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	o.mu.Lock()
	o.count[req.URL.Path]++
	o.mu.Unlock()
	n, _ := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/fields/"))
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Length: 2\r\nConnection: close\r\n")
	for i := range n {
		name := fmt.Sprintf("X-Meta-%03d: ", i)
		b.WriteString(name + strings.Repeat("v", 400-len(name)) + "\r\n")
	}
	b.WriteString("\r\nhi")
	_, _ = io.WriteString(c, b.String())
}

func (o *headerOrigin) requests(path string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.count[path]
}

// TestProxyOriginLargeHeaders: 20 header fields of 400 bytes pass and are
// cached; 170 of them (66 KiB) are over the default limit and 20 over a
// configured 4KiB: each a 502 saying so, one origin request per client
// request, counted as header_too_large.
func TestProxyOriginLargeHeaders(t *testing.T) {
	t.Parallel()
	o := startHeaderOrigin(t)
	s := startStrata(t, strataOpts{Config: fmt.Sprintf(`
origins:
  - name: big
    url: %[1]s
    default: true
  - name: small
    url: %[1]s
    hosts: [small.test]
    max_header_bytes: 4KiB
`, o.URL)})
	t.Run("20 fields of 400 bytes", func(t *testing.T) {
		for i, want := range []string{"fwd=uri-miss; stored", "hit"} {
			resp, body := get(t, s.URL+"/fields/20")
			if resp.StatusCode != 200 || string(body) != "hi" {
				t.Fatalf("#%d: %s %q, want 200 \"hi\"", i, resp.Status, body)
			}
			wantStatus(t, fmt.Sprintf("#%d", i), resp.Header, want)
			if v := resp.Header.Get("X-Meta-019"); len(v) != 400-len("X-Meta-019: ") {
				t.Errorf("#%d: X-Meta-019 has %d bytes", i, len(v))
			}
		}
		if n := o.requests("/fields/20"); n != 1 {
			t.Errorf("origin saw %d requests, want 1 (the second was a hit)", n)
		}
	})
	for _, tc := range []struct{ name, path, host string }{
		{"66KiB over the default", "/fields/170", ""},
		{"8KiB over 4KiB", "/fields/20", "small.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := o.requests(tc.path)
			resp, body := get(t, s.URL+tc.path, "Host: "+tc.host)
			if resp.StatusCode != http.StatusBadGateway || string(body) != "proxy: origin response header too large\n" {
				t.Fatalf("%s %q, want 502 naming the header size", resp.Status, body)
			}
			if n := o.requests(tc.path) - before; n != 1 {
				t.Errorf("origin saw %d requests, want exactly 1 (no retry)", n)
			}
		})
	}
	if n := originErrors(t, s, "header_too_large"); n != 2 {
		t.Errorf(`strata_origin_errors_total{kind="header_too_large"} = %d, want 2`, n)
	}
	if n := originErrors(t, s, "unreachable"); n != 0 {
		t.Errorf(`strata_origin_errors_total{kind="unreachable"} = %d, want 0`, n)
	}
}

// originErrors reads strata_origin_errors_total{kind} from s's metrics.
func originErrors(t testing.TB, s *strata, kind string) int {
	t.Helper()
	_, body := get(t, s.Admin+"/metrics")
	re := regexp.MustCompile(`(?m)^strata_origin_errors_total\{kind="` + kind + `"\} (\d+)$`)
	m := re.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no strata_origin_errors_total{kind=%q} in the metrics", kind)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
