package e2e

// HTTP validation through the real binary: revalidation with a 304, client
// conditionals, variants and stale-while-revalidate.

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestValidationRevalidate304: a stale entry with an ETag is revalidated;
// the origin's 304 refreshes it and the stored body is served.
func TestValidationRevalidate304(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin")})
	// max-age=3: the refreshed entry must still be fresh for the request
	// after the 304 on a loaded machine.
	const pq = "/obj/4k?max-age=3&etag=s"
	want := objectBytes("/obj/4k", 0, "", 0, 4096)
	if _, body := get(t, s.URL+pq); !bytes.Equal(body, want) {
		t.Fatal("miss: body differs from the origin's")
	}
	time.Sleep(3100 * time.Millisecond)
	r, body := get(t, s.URL+pq)
	wantStatus(t, "revalidation", r.Header, "fwd=stale", "fwd-status=304")
	if r.StatusCode != 200 || !bytes.Equal(body, want) {
		t.Fatalf("revalidation: status %d, %d bytes", r.StatusCode, len(body))
	}
	r, _ = get(t, s.URL+pq)
	wantStatus(t, "after the 304", r.Header, "hit")
	if n := originCount(t, o, pq); n != 2 {
		t.Errorf("origin saw %d requests, want 2", n)
	}
}

// TestValidationClientConditional: If-None-Match from the stored ETag is
// answered 304 from the cache, on GET and HEAD (curl).
func TestValidationClientConditional(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin")})
	const pq = "/obj/1k?max-age=60&etag=s"
	r, _ := get(t, s.URL+pq)
	etag := r.Header.Get("ETag")
	if etag == "" {
		t.Fatal("origin sent no ETag")
	}
	for _, args := range [][]string{{"-H", "If-None-Match: " + etag}, {"-I", "-H", "If-None-Match: W/" + etag}} {
		c := curl(t, append(args, s.URL+pq)...)
		if c.Status != 304 || len(c.Body) != 0 {
			t.Fatalf("curl %v: status %d, %d body bytes", args, c.Status, len(c.Body))
		}
		wantStatus(t, "conditional", c.Header, "hit")
		if c.Header.Get("ETag") != etag {
			t.Errorf("304 ETag %q, want %q", c.Header.Get("ETag"), etag)
		}
	}
	if n := originCount(t, o, pq); n != 1 {
		t.Errorf("origin saw %d requests, want 1", n)
	}
}

// TestValidationVariants: one stored entry per Accept-Encoding value.
func TestValidationVariants(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin")})
	const pq = "/obj/2k?max-age=60&vary=Accept-Encoding"
	bodies := map[string][]byte{}
	for _, ae := range []string{"gzip", "br", "gzip", "br"} {
		r, body := get(t, s.URL+pq, "Accept-Encoding: "+ae)
		if prev, ok := bodies[ae]; ok {
			wantStatus(t, "variant "+ae, r.Header, "hit")
			if !bytes.Equal(prev, body) {
				t.Fatalf("variant %s: hit body differs", ae)
			}
		}
		bodies[ae] = body
	}
	if bytes.Equal(bodies["gzip"], bodies["br"]) {
		t.Fatal("the two variants have the same body")
	}
	if n := originCount(t, o, pq); n != 2 {
		t.Errorf("origin saw %d requests, want 2", n)
	}
}

// TestValidationStaleWhileRevalidate: within the window the stale entry
// is served at once and refreshed in the background.
func TestValidationStaleWhileRevalidate(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin")})
	// max-age=3: the refreshed response must stay fresh long enough for
	// the polling below to see it on a loaded machine (with 1s it went
	// stale again before the next poll, under make test's parallel load).
	const pq = "/obj/1k?max-age=3&swr=60&etag=s"
	get(t, s.URL+pq)
	time.Sleep(3100 * time.Millisecond)
	r, _ := get(t, s.URL+pq)
	wantStatus(t, "stale hit", r.Header, "hit", "detail=stale")
	deadline := time.Now().Add(10 * time.Second)
	for originCount(t, o, pq) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no background revalidation within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		r, _ = get(t, s.URL+pq)
		if !strings.Contains(cacheStatus(r.Header), "stale") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantStatus(t, "after the refresh", r.Header, "hit", "detail=memory")
}
