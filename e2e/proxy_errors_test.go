package e2e

// strata's error answers and routing through the real binary: Host
// routing between two origins, 502, 504, 400, 431, a truncated origin
// body, and streaming a large object in bounded memory.

import (
	"bufio"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// routingConfig routes a.test to origin A (the default), b.test to
// origin B, down.test to a closed port and slow.test to A with a 500 ms
// read timeout.
func routingConfig(a, b, down string) string {
	return fmt.Sprintf(`
origins:
  - name: a
    url: %s
    hosts: [a.test]
    default: true
  - name: b
    url: %s
    hosts: [b.test]
  - name: down
    url: http://%s
    hosts: [down.test]
    timeouts: {connect: 1s}
  - name: slow
    url: %s
    hosts: [slow.test]
    timeouts: {read: 500ms}
`, a, b, down, a)
}

// TestProxyRoutingAndErrors: Host picks the origin; a dead origin is 502,
// a silent one 504, malformed requests 400, oversized headers 431; none
// is stored.
func TestProxyRoutingAndErrors(t *testing.T) {
	t.Parallel()
	oa, ob := startOrigin(t), startOrigin(t)
	s := startStrata(t, strataOpts{Config: routingConfig(oa.URL("origin"), ob.URL("origin"), freePort(t))})
	const pq = "/obj/1k?max-age=60"

	t.Run("host routing", func(t *testing.T) {
		for _, host := range []string{"b.test", "B.TEST", "a.test", "other.test"} {
			if resp, _ := get(t, s.URL+pq, "Host: "+host); resp.StatusCode != 200 {
				t.Fatalf("Host %s: %s", host, resp.Status)
			}
		}
		// b.test and B.TEST share one key? Hosts are case-insensitive, so
		// B.TEST may hit; either way only origin B may have seen them.
		if n := originCount(t, ob, pq); n < 1 || n > 2 {
			t.Errorf("origin B saw %d requests, want 1 or 2 (b.test, B.TEST)", n)
		}
		if n := originCount(t, oa, pq); n != 2 {
			t.Errorf("origin A saw %d requests, want 2 (a.test and the default for other.test)", n)
		}
	})
	t.Run("502 origin down", func(t *testing.T) {
		for i := range 2 {
			resp, _ := get(t, s.URL+pq, "Host: down.test")
			if resp.StatusCode != http.StatusBadGateway {
				t.Fatalf("#%d: %s, want 502", i, resp.Status)
			}
		}
	})
	t.Run("504 origin timeout", func(t *testing.T) {
		start := time.Now()
		resp, _ := get(t, s.URL+"/obj/1k?max-age=60&delay=10s", "Host: slow.test")
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("%s, want 504", resp.Status)
		}
		if d := time.Since(start); d > 5*time.Second { // the origin answers after 10s
			t.Errorf("504 took %v, want about the 500ms read timeout", d)
		}
	})
	t.Run("400 malformed", func(t *testing.T) {
		for name, raw := range map[string]string{
			"garbage":   "NONSENSE\r\n\r\n",
			"cl and te": "GET /obj/1k HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
			"two cl":    "GET /obj/1k HTTP/1.1\r\nHost: a.test\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\n",
		} {
			if st := rawStatus(t, s.URL, raw); st != 400 {
				t.Errorf("%s: status %d, want 400", name, st)
			}
		}
	})
	t.Run("431 header too large", func(t *testing.T) {
		r := curl(t, "-H", "X-Big: "+strings.Repeat("x", 20<<10), s.URL+pq)
		if r.Status != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("status %d (curl exit %d), want 431", r.Status, r.Exit)
		}
	})
}

// rawStatus sends raw bytes to the server at base and returns the status
// of its answer (0 if it closed without one).
func rawStatus(t testing.TB, base, raw string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestProxyTruncatedNotStored: an origin that promises more than it sends
// makes the client see a failure (curl exit 18, or a cut connection, or a
// 502 when the cut was known before strata answered), never a short 200,
// and nothing is stored.
func TestProxyTruncatedNotStored(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin")})
	const pq = "/obj/1MiB?max-age=60&truncate=100000"
	for i := range 2 {
		r := curl(t, s.URL+pq)
		if r.Exit == 0 && r.Status == http.StatusBadGateway && string(r.Body) == "proxy: origin body truncated\n" {
			continue
		}
		if r.Exit == 0 {
			t.Fatalf("#%d: curl succeeded with %d %d bytes, want a failure (exit 18) or a 502", i, r.Status, len(r.Body))
		}
		if r.Exit != 18 && r.Exit != 52 && r.Exit != 56 {
			t.Errorf("#%d: curl exit %d (%s), want 18 (partial file)", i, r.Exit, r.Stderr)
		}
	}
	if n := originCount(t, o, pq); n != 2 {
		t.Errorf("origin saw %d requests, want 2: a truncated body must not be stored", n)
	}
}

// TestProxyLargeObjectRSS: a 256 MiB object, over max_object_size so it
// streams through uncached, arrives with the right bytes while strata's
// resident memory grows by less than 64 MiB.
func TestProxyLargeObjectRSS(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Config: fmt.Sprintf("origins: [{url: %s}]\ncache: {max_object_size: 64MiB}\n", o.URL("origin"))})
	streamLarge(t, s, "/obj/256MiB?max-age=600")
}

// TestProxyLargeObjectCached: the same object, cacheable: the client
// must get all of it while it is stored, though the origin is faster than
// the client and the store keeps few of the slices (a regression test: the
// fill used to run ahead and cut its only reader off after 24..70 MiB).
func TestProxyLargeObjectCached(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin")})
	streamLarge(t, s, "/obj/256MiB?max-age=600&n=cached")
}

// streamLarge GETs a 256 MiB object through s, checks its bytes and that
// strata's peak RSS grew by less than 64 MiB.
func streamLarge(t *testing.T, s *strata, pq string) {
	get(t, s.URL+"/obj/64k?max-age=60") // warm up the listener and pools
	before, _, err := s.RSS()
	if err != nil {
		t.Skipf("RSS: %v", err)
	}
	const size = 256 << 20
	resp, err := http.Get(s.URL + pq)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := crc32.NewIEEE()
	n, err := io.Copy(h, resp.Body)
	if err != nil || n != size {
		t.Fatalf("read %d bytes, err %v; want %d", n, err, size)
	}
	if h.Sum32() != objectCRC("/obj/256MiB", 0, "", size) {
		t.Fatal("256 MiB body differs from the origin's")
	}
	_, peak, err := s.RSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("strata RSS before %d MiB, peak after %d MiB", before>>20, peak>>20)
	if grew := peak - before; grew >= 64<<20 {
		t.Errorf("strata's peak RSS grew by %d MiB streaming 256 MiB, want < 64 MiB", grew>>20)
	}
}
