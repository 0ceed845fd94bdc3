package e2e

// At the edge: HAProxy in front terminating TLS and HTTP/2 (the shipped
// configs/haproxy/edge.cfg), and the request normalisation strata does for
// browsers (Accept-Encoding), against the real binaries.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// edgeCert writes a self-signed certificate for 127.0.0.1 and its key,
// both PEM, into one file (HAProxy's crt format) and returns its path.
func edgeCert(t testing.TB) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "strata-edge-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})...)
	path := filepath.Join(t.TempDir(), "edge.pem")
	if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// edgeLB is haproxy running the shipped edge.cfg in front of one strata.
type edgeLB struct {
	TLS, Plain string // https://127.0.0.1:P, http://127.0.0.1:Q
}

var edgeServerRE = regexp.MustCompile(`(?m)^(\s*server\s+s1\s+)\S+`)

// startEdgeLB runs configs/haproxy/edge.cfg with its bind addresses,
// certificate and server address replaced by loopback ones.
func startEdgeLB(t testing.TB, strataURL string) *edgeLB {
	t.Helper()
	bin := haproxyBin(t)
	cfg, err := os.ReadFile(filepath.Join(repoRoot(t), "configs", "haproxy", "edge.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	tlsAddr, plainAddr := freePort(t), freePort(t)
	binds := 0
	text := bindRE.ReplaceAllStringFunc(string(cfg), func(m string) string {
		binds++
		addr := tlsAddr
		if binds == 2 {
			addr = plainAddr
		}
		return bindRE.ReplaceAllString(m, "${1}"+addr)
	})
	text = strings.Replace(text, "/etc/haproxy/certs/edge.pem", edgeCert(t), 1)
	servers := 0
	text = edgeServerRE.ReplaceAllStringFunc(text, func(m string) string {
		servers++
		return edgeServerRE.ReplaceAllString(m, "${1}"+strings.TrimPrefix(strataURL, "http://"))
	})
	if binds != 2 || servers != 1 {
		t.Fatalf("edge.cfg: want two bind lines and one server line, found %d and %d", binds, servers)
	}
	path := filepath.Join(t.TempDir(), "edge.cfg")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := &outputLog{}
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		if t.Failed() {
			t.Logf("haproxy output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for _, a := range []string{tlsAddr, plainAddr} {
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-done:
				t.Fatalf("haproxy exited; output:\n%s", out.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("haproxy not listening on %s; output:\n%s", a, out.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return &edgeLB{TLS: "https://" + tlsAddr, Plain: "http://" + plainAddr}
}

// curlHTTP2 skips unless curl speaks HTTP/2.
func curlHTTP2(t testing.TB) {
	t.Helper()
	out, err := exec.Command("curl", "--version").Output()
	if err != nil {
		t.Skip("curl not installed: the edge tests drive HAProxy with curl --http2 (apt-get install curl)")
	}
	if !strings.Contains(string(out), "HTTP2") {
		t.Skip("this curl has no HTTP/2 (its --version lists no HTTP2 feature): the edge h2 test needs it")
	}
}

// TestEdgeHTTP2: through HAProxy's TLS + HTTP/2 front, a response and its
// Cache-Status arrive intact, miss then hit, and HTTP/1.1 over the same
// front agrees.
func TestEdgeHTTP2(t *testing.T) {
	curlHTTP2(t)
	origin := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: origin.URL("origin")})
	lb := startEdgeLB(t, s.URL)
	const pq = "/obj/8k/edge?max-age=60&etag=1"
	want := objectBytes("/obj/8k/edge", 0, "", 0, 8192)
	for i, wantCS := range []string{"fwd=uri-miss", "hit"} {
		r := curl(t, "--http2", "-k", lb.TLS+pq)
		if r.Exit != 0 || r.Proto != "HTTP/2" || r.Status != 200 {
			t.Fatalf("request %d: exit %d (%s) proto %q status %d", i, r.Exit, r.Stderr, r.Proto, r.Status)
		}
		if cs := r.Header.Get("Cache-Status"); !strings.Contains(cs, wantCS) {
			t.Errorf("request %d: Cache-Status %q, want %s", i, cs, wantCS)
		}
		if string(r.Body) != string(want) || r.Header.Get("Etag") == "" {
			t.Fatalf("request %d: body of %d bytes differs, or no ETag", i, len(r.Body))
		}
	}
	r := curl(t, "--http1.1", "-k", lb.TLS+pq)
	if r.Proto != "HTTP/1.1" || !strings.Contains(r.Header.Get("Cache-Status"), "hit") || string(r.Body) != string(want) {
		t.Fatalf("HTTP/1.1 over TLS: %q %q, %d bytes", r.Proto, r.Header.Get("Cache-Status"), len(r.Body))
	}
	r = curl(t, "--http2", "-k", "-r", "100-199", lb.TLS+pq)
	if r.Status != 206 || string(r.Body) != string(want[100:200]) {
		t.Fatalf("range over h2: %d, %d bytes", r.Status, len(r.Body))
	}
}

// TestEdgeAcceptEncodingSpellings: twenty spellings of Accept-Encoding on
// a URL that varies on it cost three origin fetches.
func TestEdgeAcceptEncodingSpellings(t *testing.T) {
	origin := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: origin.URL("origin")})
	spellings := []string{"gzip, deflate, br, zstd", "gzip, deflate, br", "br, gzip", "gzip,deflate,br",
		"br;q=1.0, gzip;q=0.8, *;q=0.1", "GZIP, BR", "*", "gzip, br;q=0.9", "gzip", "gzip, deflate", "x-gzip",
		"deflate, gzip;q=1.0, *;q=0.5, br;q=0", "gzip;q=1.0, identity; q=0.5, *;q=0", "br;q=0, gzip",
		"identity", "", "deflate", "compress, zstd;q=1", "gzip;q=0, br;q=0", "identity;q=1, *;q=0"}
	const pq = "/obj/2k/ae?max-age=60&vary=Accept-Encoding"
	for _, ae := range spellings {
		r := curl(t, "-H", "Accept-Encoding: "+ae, s.URL+pq)
		if r.Status != 200 {
			t.Fatalf("%q: status %d (%s)", ae, r.Status, r.Stderr)
		}
	}
	n := originTotal(t, origin, []string{pq})
	t.Logf("20 Accept-Encoding spellings cost %d origin fetches", n)
	if n > 3 {
		t.Errorf("20 Accept-Encoding spellings cost %d origin fetches, want at most 3", n)
	}
}

// TestEdgeThroughput measures hits of a 4 KiB object through HAProxy's
// TLS front, side by side in one run: HTTP/2 (h2load), HTTP/1.1 (h2load
// --h1, same tool and connections) and HTTP/1.1 with wrk, in three
// interleaved rounds whose medians are compared. It takes about 60 s and
// needs h2load (Debian nghttp2-client) and wrk: it runs only with
// STRATA_EDGE_BENCH=1.
func TestEdgeThroughput(t *testing.T) {
	if os.Getenv("STRATA_EDGE_BENCH") == "" {
		t.Skip("set STRATA_EDGE_BENCH=1 to measure h2 against h1 through HAProxy (h2load, wrk; ~50 s)")
	}
	for _, tool := range []string{"h2load", "wrk"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install nghttp2-client wrk)", tool)
		}
	}
	origin := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: origin.URL("origin"), Mem: "64MiB"})
	lb := startEdgeLB(t, s.URL)
	url := lb.TLS + "/obj/4k/bench?max-age=3600"
	curl(t, "-k", url) // fill
	const conns, dur = "32", "5"
	run := func(name string, args ...string) float64 {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		var rps float64
		for _, re := range []*regexp.Regexp{regexp.MustCompile(`finished in [^,]+, ([0-9.]+) req/s`), regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)} {
			if m := re.FindSubmatch(out); m != nil {
				rps = parseFloat(t, string(m[1]))
			}
		}
		if rps == 0 {
			t.Fatalf("%s: no rate in output:\n%s", name, out)
		}
		t.Logf("%-28s %10.0f req/s", name, rps)
		return rps
	}
	// Three interleaved rounds, medians: the machine's load drifts by more
	// than the difference measured within a minute.
	var h2s, h1s, wrks []float64
	for range 3 {
		h2s = append(h2s, run("h2load h2 (TLS, 32 conns)", "h2load", "-c", conns, "-m", "1", "-D", dur, "-t", "1", url))
		h1s = append(h1s, run("h2load --h1 (TLS, 32 conns)", "h2load", "--h1", "-c", conns, "-D", dur, "-t", "1", url))
		wrks = append(wrks, run("wrk h1 (TLS, 32 conns)", "wrk", "-t", "1", "-c", conns, "-d", dur+"s", url))
	}
	h2, h1, wrk := median3(h2s), median3(h1s), median3(wrks)
	t.Logf("medians: h2 %.0f, h2load --h1 %.0f, wrk %.0f req/s", h2, h1, wrk)
	plain := run("wrk h1 (HAProxy, no TLS)", "wrk", "-t", "1", "-c", conns, "-d", dur+"s", lb.Plain+"/obj/4k/bench?max-age=3600")
	direct := run("wrk h1 direct to strata", "wrk", "-t", "1", "-c", conns, "-d", dur+"s", s.URL+"/obj/4k/bench?max-age=3600")
	t.Logf("h2/h1 through HAProxy: %.2f (h2load --h1), %.2f (wrk); HAProxy TLS / plain / direct: %.2f / %.2f / 1",
		h2/h1, h2/wrk, wrk/direct, plain/direct)
	if h2 < 0.8*max(h1, wrk) {
		t.Errorf("h2 %.0f req/s is under 0.8x h1 (%.0f, %.0f)", h2, h1, wrk)
	}
}

// median3 returns the median of three values.
func median3(v []float64) float64 {
	a, b, c := v[0], v[1], v[2]
	return max(min(a, b), min(max(a, b), c))
}

func parseFloat(t testing.TB, s string) float64 {
	t.Helper()
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return f
}

// TestEdgeCompression: a text page the origin sends uncompressed is
// fetched once and served to gzip, br and identity clients (curl
// --compressed decodes) from stored representations, each decoding to the
// origin's bytes; so is a text of many slices, whose compressed
// representations are sliced too and answer ranges of their own bytes;
// the sample origin's random bytes, which do not pay to compress, are
// served as identity to every coding, still from one fetch.
func TestEdgeCompression(t *testing.T) {
	pages := map[string][]byte{
		"/page": []byte(strings.Repeat("<p class=\"row\">strata edge compression test row</p>\n", 400)),
		"/big":  wordsText(600 << 10),
	}
	var fetches atomic.Int64
	text := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		page := pages[r.URL.Path]
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("ETag", `"page-1"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		_, _ = w.Write(page)
	}))
	t.Cleanup(text.Close)
	origin := startOrigin(t)
	for _, c := range []struct {
		name, origin, pq, config string
		want                     []byte
		compressed               bool
	}{
		{"text page", text.URL, "/page", "", pages["/page"], true},
		{"text of many slices", text.URL, "/big", "cache:\n  slice_size: 64KiB\n", pages["/big"], true},
		{"random bytes", origin.URL("origin"), "/obj/16k/z?max-age=60&etag=1&ctype=text/plain", "", objectBytes("/obj/16k/z", 0, "", 0, 16<<10), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fetches.Store(0)
			s := startStrata(t, strataOpts{Origin: c.origin, Config: c.config})
			curl(t, "-H", "Accept-Encoding: gzip", s.URL+c.pq) // the fill
			// The representations are stored just after the fill, off its path.
			for i := 0; curl(t, "-H", "Accept-Encoding: gzip", s.URL+c.pq).Header.Get("Vary") == ""; i++ {
				if i == 100 {
					t.Fatal("no Accept-Encoding variants 10s after the fill")
				}
				time.Sleep(100 * time.Millisecond)
			}
			for _, ae := range []string{"gzip", "br", "identity"} {
				r := curl(t, "--compressed", "-H", "Accept-Encoding: "+ae, s.URL+c.pq)
				if r.Status != 200 || string(r.Body) != string(c.want) {
					t.Fatalf("%s: status %d, %d bytes (%s)", ae, r.Status, len(r.Body), r.Stderr)
				}
				if !strings.Contains(r.Header.Get("Cache-Status"), "hit") || r.Header.Get("Vary") != "Accept-Encoding" {
					t.Errorf("%s: Cache-Status %q, Vary %q", ae, r.Header.Get("Cache-Status"), r.Header.Get("Vary"))
				}
				wantCE := ""
				if c.compressed && ae != "identity" {
					wantCE = ae
				}
				if ce := r.Header.Get("Content-Encoding"); ce != wantCE {
					t.Errorf("%s: Content-Encoding %q, want %q", ae, ce, wantCE)
				}
			}
			if c.config != "" {
				checkCodedRanges(t, s.URL+c.pq)
			}
			n := fetches.Load()
			if !c.compressed {
				n = int64(originTotal(t, origin, []string{c.pq}))
			}
			if n != 1 {
				t.Errorf("origin fetched %d times, want 1", n)
			}
		})
	}
}

// wordsText is n bytes of pseudo-random lowercase words: text that gzip
// and br shrink to about 60%, so that 600 KiB compress to several 64 KiB
// slices.
func wordsText(n int) []byte {
	rng := mrand.New(mrand.NewPCG(1, 7))
	b := make([]byte, 0, n+16)
	for len(b) < n {
		for range 3 + rng.IntN(7) {
			b = append(b, byte('a'+rng.IntN(26)))
		}
		b = append(b, ' ')
	}
	return b[:n]
}

// checkCodedRanges: a range of each compressed representation at url,
// across a slice boundary, is a range of that representation's own bytes.
func checkCodedRanges(t *testing.T, url string) {
	t.Helper()
	for _, ae := range []string{"gzip", "br"} {
		whole := curl(t, "-H", "Accept-Encoding: "+ae, url).Body
		r := curl(t, "-H", "Accept-Encoding: "+ae, "-H", "Range: bytes=65000-66999", url)
		if len(whole) < 67000 || r.Status != 206 || r.Header.Get("Content-Encoding") != ae || string(r.Body) != string(whole[65000:67000]) {
			t.Errorf("%s range: status %d, Content-Encoding %q, %d bytes of a %d-byte representation",
				ae, r.Status, r.Header.Get("Content-Encoding"), len(r.Body), len(whole))
		}
	}
}
