package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestOriginContent: bodies are the documented function of path, version
// and variant (this package's copy of the formula agrees with the binary),
// and the same URL always gives the same bytes.
func TestOriginContent(t *testing.T) {
	o := startOrigin(t)
	base := o.URL("origin")
	for _, tc := range []struct {
		path, query string
		size        int64
		version     int64
	}{
		{"/obj/1k", "", 1024, 0},
		{"/obj/1KiB", "?max-age=60", 1024, 0},
		{"/obj/256k/a", "", 256 << 10, 0},
		{"/obj/256k/b", "", 256 << 10, 0},
		{"/obj/1MiB", "?version=3", 1 << 20, 3},
		{"/obj/0", "", 0, 0},
		{"/obj/13", "", 13, 0},
	} {
		r := curl(t, base+tc.path+tc.query)
		if r.Exit != 0 || r.Status != 200 || r.Header.Get("Content-Length") != strconv.FormatInt(tc.size, 10) {
			t.Fatalf("%s: exit %d status %d headers %v", tc.path, r.Exit, r.Status, r.Header)
		}
		if want := objectBytes(tc.path, tc.version, "", 0, tc.size); !bytes.Equal(r.Body, want) {
			t.Fatalf("%s: body differs from the formula (got %d bytes)", tc.path, len(r.Body))
		}
		if again := curl(t, base+tc.path+tc.query); !bytes.Equal(again.Body, r.Body) {
			t.Fatalf("%s: second request gave other bytes", tc.path)
		}
	}
	if bytes.Equal(objectBytes("/obj/256k/a", 0, "", 0, 64), objectBytes("/obj/256k/b", 0, "", 0, 64)) {
		t.Fatal("distinct paths must give distinct content")
	}
	// Variants: the content depends on the headers vary= names.
	gz := curl(t, "-H", "Accept-Encoding: gzip", base+"/obj/1k?vary=Accept-Encoding")
	br := curl(t, "-H", "Accept-Encoding: br", base+"/obj/1k?vary=Accept-Encoding")
	if gz.Header.Get("Vary") != "Accept-Encoding" || !bytes.Equal(gz.Body, objectBytes("/obj/1k", 0, "gzip", 0, 1024)) ||
		!bytes.Equal(br.Body, objectBytes("/obj/1k", 0, "br", 0, 1024)) {
		t.Fatalf("variants: Vary %q", gz.Header.Get("Vary"))
	}
}

// TestOriginHeaders: query parameters become headers.
func TestOriginHeaders(t *testing.T) {
	o := startOrigin(t)
	base := o.URL("origin")
	v1 := curl(t, base+"/obj/1k?etag=1&version=1")
	for _, tc := range []struct {
		query, header, want string
	}{
		{"max-age=60", "Cache-Control", "max-age=60"},
		{"s-maxage=5&no-cache&must-revalidate", "Cache-Control", "no-cache, s-maxage=5, must-revalidate"},
		{"no-store&private", "Cache-Control", "private, no-store"},
		{"max-age=1&swr=30&sie=60", "Cache-Control", "max-age=1, stale-while-revalidate=30, stale-if-error=60"},
		{"etag=1", "Etag", fmt.Sprintf(`"%x-400"`, objectSeed("/obj/1k", 0, ""))},
		{"etag=w", "Etag", fmt.Sprintf(`W/"%x-400"`, objectSeed("/obj/1k", 0, ""))},
		{"lm=1&version=2", "Last-Modified", "Mon, 01 Jan 2024 02:00:00 GMT"},
		{"tag=a,b", "Surrogate-Key", "a b"},
		{"vary=Accept-Encoding", "Vary", "Accept-Encoding"},
		{"hdr=X-Test:yes", "X-Test", "yes"},
		{"ctype=text/plain", "Content-Type", "text/plain"},
		{"", "Content-Type", "application/octet-stream"},
		{"", "Accept-Ranges", "bytes"},
	} {
		r := curl(t, base+"/obj/1k?"+tc.query)
		if got := r.Header.Get(tc.header); r.Status != 200 || got != tc.want {
			t.Errorf("?%s: %s = %q (status %d), want %q", tc.query, tc.header, got, r.Status, tc.want)
		}
	}
	if r := curl(t, base+"/obj/1k?cookie=1"); r.Header.Get("Set-Cookie") == "" {
		t.Error("cookie=1: no Set-Cookie")
	}
	if r := curl(t, base+"/obj/1k?expires=60"); r.Header.Get("Expires") == "" {
		t.Error("expires=60: no Expires")
	}
	if v1.Header.Get("Etag") == curl(t, base+"/obj/1k?etag=1").Header.Get("Etag") {
		t.Error("version=1 must change the ETag")
	}
	for _, tc := range []struct{ query, status string }{{"status=404", "404"}, {"status=503", "503"}, {"status=204", "204"}, {"max-age=-1", "400"}} {
		if r := curl(t, base+"/obj/1k?"+tc.query); strconv.Itoa(r.Status) != tc.status {
			t.Errorf("?%s: status %d, want %s", tc.query, r.Status, tc.status)
		}
	}
	if r := curl(t, "-X", "POST", base+"/obj/1k"); r.Status != 405 {
		t.Errorf("POST: status %d, want 405", r.Status)
	}
}

// TestOriginHead: HEAD of a 4 GiB object answers its length at once.
func TestOriginHead(t *testing.T) {
	o := startOrigin(t)
	r := curl(t, "-I", o.URL("origin")+"/obj/4GiB?etag=1")
	if r.Exit != 0 || r.Status != 200 || r.Header.Get("Content-Length") != "4294967296" || len(r.Body) != 0 {
		t.Fatalf("HEAD: exit %d status %d headers %v body %d", r.Exit, r.Status, r.Header, len(r.Body))
	}
	resp, err := http.Head(o.URL("origin") + "/obj/4GiB")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != 4<<30 || n != 0 {
		t.Fatalf("HEAD (Go client): %d, length %d, %d body bytes", resp.StatusCode, resp.ContentLength, n)
	}
	if s := getOriginStats(t, o); s.Bytes != 0 || s.Requests != 2 {
		t.Fatalf("HEAD sent %d body bytes in %d requests", s.Bytes, s.Requests)
	}
}

// TestOriginRanges: single range → 206, several → multipart/byteranges,
// unsatisfiable → 416, If-Range mismatch → 200.
func TestOriginRanges(t *testing.T) {
	o := startOrigin(t)
	u := o.URL("origin") + "/obj/1MiB?etag=1"
	obj := objectBytes("/obj/1MiB", 0, "", 0, 1<<20)

	r := curl(t, "-r", "1000-1999", u)
	if r.Status != 206 || r.Header.Get("Content-Range") != "bytes 1000-1999/1048576" || !bytes.Equal(r.Body, obj[1000:2000]) {
		t.Fatalf("single range: %d %v (%d bytes)", r.Status, r.Header, len(r.Body))
	}
	r = curl(t, "-r", "-10", u)
	if r.Status != 206 || !bytes.Equal(r.Body, obj[len(obj)-10:]) {
		t.Fatalf("suffix range: %d", r.Status)
	}

	r = curl(t, "-r", "0-9,500000-500099,-5", u)
	mt, ps, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if r.Status != 206 || err != nil || mt != "multipart/byteranges" {
		t.Fatalf("multi range: %d %q", r.Status, r.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(bytes.NewReader(r.Body), ps["boundary"])
	for _, want := range []struct {
		cr         string
		start, end int
	}{{"bytes 0-9/1048576", 0, 10}, {"bytes 500000-500099/1048576", 500000, 500100}, {"bytes 1048571-1048575/1048576", 1048571, 1048576}} {
		part, err := mr.NextPart()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(part)
		if part.Header.Get("Content-Range") != want.cr || !bytes.Equal(data, obj[want.start:want.end]) {
			t.Fatalf("part %q: %q, %d bytes", want.cr, part.Header.Get("Content-Range"), len(data))
		}
	}
	if _, err := mr.NextPart(); err != io.EOF {
		t.Fatalf("after the last part: %v", err)
	}

	r = curl(t, "-r", "2000000-", u)
	if r.Status != 416 || r.Header.Get("Content-Range") != "bytes */1048576" {
		t.Fatalf("unsatisfiable: %d %v", r.Status, r.Header)
	}
	r = curl(t, "-r", "0-9", "-H", `If-Range: "other"`, u)
	if r.Status != 200 || len(r.Body) != 1<<20 {
		t.Fatalf("If-Range mismatch: %d, %d bytes", r.Status, len(r.Body))
	}
	etag := curl(t, "-I", u).Header.Get("Etag")
	if r = curl(t, "-r", "0-9", "-H", "If-Range: "+etag, u); r.Status != 206 {
		t.Fatalf("If-Range match: %d", r.Status)
	}
	if s := getOriginStats(t, o); s.Partial != 4 { // 416 and the If-Range mismatch are not partial
		t.Fatalf("partial = %d, want 4", s.Partial)
	}
}

// TestOriginConditional: validators → 304.
func TestOriginConditional(t *testing.T) {
	o := startOrigin(t)
	base := o.URL("origin")
	etag := curl(t, "-I", base+"/obj/1k?etag=1").Header.Get("Etag")
	for _, tc := range []struct {
		query, header string
		status        int
	}{
		{"etag=1", "If-None-Match: " + etag, 304},
		{"etag=1", `If-None-Match: "x", W/` + etag, 304}, // weak comparison, a list
		{"etag=1", "If-None-Match: *", 304},
		{"etag=1", `If-None-Match: "x"`, 200},
		{"etag=1&version=1", "If-None-Match: " + etag, 200},
		{"lm=1", "If-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT", 304},
		{"lm=1", "If-Modified-Since: Sun, 31 Dec 2023 00:00:00 GMT", 200},
		{"lm=1&version=1", "If-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT", 200},
		{"", "If-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT", 200}, // no Last-Modified
	} {
		r := curl(t, "-H", tc.header, base+"/obj/1k?"+tc.query)
		if r.Status != tc.status {
			t.Errorf("?%s %s: %d, want %d", tc.query, tc.header, r.Status, tc.status)
		}
		if r.Status == 304 && (len(r.Body) != 0 || r.Header.Get("Etag")+r.Header.Get("Last-Modified") == "") {
			t.Errorf("?%s: 304 with %d body bytes, headers %v", tc.query, len(r.Body), r.Header)
		}
	}
}

// TestOriginTruncate: truncate=N promises the whole length and closes after
// N bytes; chunked=1 has no Content-Length.
func TestOriginTruncate(t *testing.T) {
	o := startOrigin(t)
	base := o.URL("origin")
	resp, err := http.Get(base + "/obj/1k?truncate=100")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ContentLength != 1024 || !errors.Is(err, io.ErrUnexpectedEOF) || !bytes.Equal(got, objectBytes("/obj/1k", 0, "", 0, 100)) {
		t.Fatalf("truncate: length %d, err %v, %d bytes", resp.ContentLength, err, len(got))
	}
	if r := curl(t, base+"/obj/1MiB?truncate=1000"); r.Exit != 18 || len(r.Body) != 1000 {
		t.Fatalf("curl on a truncated body: exit %d, %d bytes (%s)", r.Exit, len(r.Body), r.Stderr)
	}
	if r := curl(t, base+"/obj/100k?chunked=1&truncate=10"); r.Exit != 18 {
		t.Fatalf("curl on a truncated chunked body: exit %d (%s)", r.Exit, r.Stderr)
	}

	resp, err = http.Get(base + "/obj/100k?chunked=1")
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.ContentLength != -1 || len(resp.TransferEncoding) == 0 || !bytes.Equal(got, objectBytes("/obj/100k", 0, "", 0, 100<<10)) {
		t.Fatalf("chunked: length %d, TE %v, err %v, %d bytes", resp.ContentLength, resp.TransferEncoding, err, len(got))
	}
}

// TestOriginSlow: delay= holds the headers back, rate= paces the body.
// Only lower bounds are asserted: a loaded machine can only be slower.
func TestOriginSlow(t *testing.T) {
	o := startOrigin(t)
	base := o.URL("origin")
	start := time.Now()
	if r := curl(t, base+"/obj/1k?delay=200ms"); r.Status != 200 || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("delay=200ms: status %d after %v", r.Status, time.Since(start))
	}
	start = time.Now()
	r := curl(t, base+"/obj/50k?rate=100KiB")
	if d := time.Since(start); r.Status != 200 || d < 450*time.Millisecond || !bytes.Equal(r.Body, objectBytes("/obj/50k", 0, "", 0, 50<<10)) {
		t.Fatalf("rate=100KiB for 50 KiB: status %d after %v, %d bytes", r.Status, d, len(r.Body))
	}
}

// TestOriginStats: /_stats counts requests, body bytes and URIs; reset
// zeroes them.
func TestOriginStats(t *testing.T) {
	o := startOrigin(t)
	base := o.URL("origin")
	curl(t, base+"/obj/1k")
	originPost(t, o, "/_stats/reset")
	curl(t, base+"/obj/1k?max-age=60")
	curl(t, base+"/obj/1k?max-age=60")
	curl(t, "-r", "0-99", base+"/obj/4k")
	curl(t, base+"/nope")
	s := getOriginStats(t, o)
	if s.Requests != 4 || s.Bytes != 2*1024+100 || s.Paths["/obj/1k?max-age=60"] != 2 || s.Paths["/obj/4k"] != 1 ||
		s.Paths["/nope"] != 1 || s.Paths["/obj/1k"] != 0 || s.Partial != 1 {
		t.Fatalf("stats: %+v", s)
	}
}

// TestOriginControl: fail= makes every object fail, epoch= changes every
// object.
func TestOriginControl(t *testing.T) {
	o := startOrigin(t)
	base := o.URL("origin")
	originPost(t, o, "/_control?fail=503")
	if r := curl(t, base+"/obj/1k"); r.Status != 503 {
		t.Fatalf("fail=503: %d", r.Status)
	}
	originPost(t, o, "/_control?fail=close")
	if r := curl(t, base+"/obj/1k"); r.Exit != 52 {
		t.Fatalf("fail=close: curl exit %d, want 52 (empty reply)", r.Exit)
	}
	originPost(t, o, "/_control?fail=0&epoch=7")
	if r := curl(t, base+"/obj/1k"); r.Status != 200 || !bytes.Equal(r.Body, objectBytes("/obj/1k", 7, "", 0, 1024)) {
		t.Fatalf("epoch=7: %d", r.Status)
	}
}

// TestOriginLarge: a large object streams with the right bytes while the
// origin's memory stays flat; SIGTERM stops it cleanly.
func TestOriginLarge(t *testing.T) {
	o := startOrigin(t)
	const size = 128 << 20
	resp, err := http.Get(o.URL("origin") + "/obj/128MiB")
	if err != nil {
		t.Fatal(err)
	}
	h := crc32.NewIEEE()
	n, err := io.Copy(h, resp.Body)
	resp.Body.Close()
	if err != nil || n != size || h.Sum32() != objectCRC("/obj/128MiB", 0, "", size) {
		t.Fatalf("128 MiB: %d bytes, err %v, crc mismatch=%v", n, err, h.Sum32() != objectCRC("/obj/128MiB", 0, "", size))
	}
	_, peak, err := o.RSS()
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if peak > 64<<20 {
		t.Fatalf("origin peak RSS %d MiB while streaming 128 MiB", peak>>20)
	}
	if s := getOriginStats(t, o); s.Bytes != size {
		t.Fatalf("stats bytes %d, want %d", s.Bytes, size)
	}
	if err := o.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
}
