package proxy

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"strata/proxy/s3"
)

// s3Pair is a pair whose origin is an S3 origin for bucket "media" with
// the fake's credentials; h answers as the bucket would.
func s3Pair(t *testing.T, h http.HandlerFunc, mod func(*S3Options)) *pair {
	t.Helper()
	return newPair(t, h, func(o *Options) {
		so := &S3Options{Bucket: "media", Region: "eu-west-1", AccessKeyID: "AK", SecretAccessKey: "SK",
			RetryBase: time.Millisecond, ExposeHeaders: []string{"x-amz-meta-*", "X-Amz-Version-Id"}}
		if mod != nil {
			mod(so)
		}
		o.Origins[0].S3 = so
		o.Origins[0].HostHeader = HostOrigin
	})
}

// verifySigned checks r is a read signed as strata signs: the
// Authorization recomputed from the bytes received matches.
func verifySigned(t *testing.T, r *http.Request) {
	t.Helper()
	date := r.Header.Get(s3.HeaderDate)
	if len(date) != 16 || r.Header.Get(s3.HeaderContentSHA256) != s3.UnsignedPayload {
		t.Errorf("date %q, payload %q", date, r.Header.Get(s3.HeaderContentSHA256))
		return
	}
	signer := s3.NewSigner(s3.Credentials{AccessKeyID: "AK", SecretAccessKey: "SK"}, "eu-west-1")
	want := signer.AppendAuthorization(nil, r.Method, []byte(r.RequestURI), []byte(r.Host), []byte(date))
	if got := r.Header.Get("Authorization"); got != string(want) {
		t.Errorf("Authorization %q\nwant %q", got, want)
	}
}

func s3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("X-Amz-Request-Id", "REQ123")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>m</Message><RequestId>REQ123</RequestId></Error>`, code)
}

// TestS3Request: the client's path becomes the key, sent escaped and
// signed; its query, Authorization and x-amz-* headers stay behind; the
// answer's x-amz-* headers are dropped but for ExposeHeaders.
func TestS3Request(t *testing.T) {
	var uri atomic.Value
	p := s3Pair(t, func(w http.ResponseWriter, r *http.Request) {
		uri.Store(r.RequestURI)
		verifySigned(t, r)
		if r.Header.Get("X-Amz-Foo") != "" || strings.Contains(r.Header.Get("Authorization"), "Bearer") {
			t.Errorf("client headers passed on: %v", r.Header)
		}
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef-3"`)
		w.Header().Set("X-Amz-Request-Id", "REQ")
		w.Header().Set("X-Amz-Id-2", "ID2")
		w.Header().Set("X-Amz-Server-Side-Encryption", "AES256")
		w.Header().Set("X-Amz-Meta-Color", "blue")
		w.Header().Set("X-Amz-Version-Id", "v1")
		w.Write([]byte("object"))
	}, nil)
	for _, tc := range []struct{ path, want string }{
		{"/a%20b+c//d?acl", "/media/a%20b%2Bc//d"},
		{"/caf%C3%A9/100%25", "/media/caf%C3%A9/100%25"},
		{"/x%2fy", "/media/x/y"},
	} {
		out, err := p.raw("GET " + tc.path + " HTTP/1.1\r\nHost: example.com\r\nX-Amz-Foo: x\r\nAuthorization: Bearer y\r\nConnection: close\r\n\r\n")
		if err != nil || !strings.HasPrefix(out, "HTTP/1.1 200") || uri.Load() != tc.want {
			t.Fatalf("%s: sent %v, answer %q %v", tc.path, uri.Load(), out, err)
		}
		lower := strings.ToLower(out)
		for _, h := range []string{"x-amz-request-id", "x-amz-id-2", "x-amz-server-side-encryption"} {
			if strings.Contains(lower, h+":") {
				t.Errorf("%s passed on", h)
			}
		}
		for _, h := range []string{"x-amz-meta-color: blue", "x-amz-version-id: v1", `etag: "0123456789abcdef0123456789abcdef-3"`} {
			if !strings.Contains(lower, h) {
				t.Errorf("%s missing:\n%s", h, out)
			}
		}
	}
}

// TestS3NoKeyNoWrite: the bucket itself (a listing) and writes never
// reach the bucket.
func TestS3NoKeyNoWrite(t *testing.T) {
	p := s3Pair(t, func(w http.ResponseWriter, r *http.Request) { t.Errorf("bucket asked %s %s", r.Method, r.RequestURI) }, nil)
	for _, tc := range []struct {
		method, path string
		want         int
	}{{"GET", "/", 404}, {"GET", "/?list-type=2", 404}, {"PUT", "/k", 405}, {"DELETE", "/k", 405}, {"POST", "/k?uploads", 405}} {
		resp := p.do(tc.method, tc.path)
		if resp.StatusCode() != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode(), tc.want)
		}
	}
}

// TestS3Negative: NoSuchKey and AccessDenied are cached for their TTLs;
// a missing key is asked again once the TTL passed.
func TestS3Negative(t *testing.T) {
	p := s3Pair(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/media/denied") {
			s3Error(w, 403, "AccessDenied")
			return
		}
		s3Error(w, 404, "NoSuchKey")
	}, func(o *S3Options) { o.DeniedTTL = 10 * time.Second })
	for _, tc := range []struct {
		path   string
		status int
		ttl    time.Duration
	}{{"/missing", 404, time.Minute}, {"/denied", 403, 10 * time.Second}} {
		before := p.hits.Load()
		for range 3 {
			resp := p.get(tc.path)
			if resp.StatusCode() != tc.status || strings.Contains(string(resp.Body()), "REQ123") {
				t.Fatalf("%s: %d %q", tc.path, resp.StatusCode(), resp.Body())
			}
		}
		if got := p.hits.Load() - before; got != 1 {
			t.Fatalf("%s: bucket asked %d times, want 1", tc.path, got)
		}
		p.clock.Advance(tc.ttl + time.Second)
		p.get(tc.path)
		if got := p.hits.Load() - before; got != 2 {
			t.Fatalf("%s: bucket asked %d times after the TTL, want 2", tc.path, got)
		}
	}
	if got := p.srv.set.Load().router.all[0].s3.c.negatives.Load(); got != 4 {
		t.Errorf("negatives %d, want 4", got)
	}
}

// TestS3Retry: SlowDown and InternalError are retried until an answer
// comes, within MaxRetries and RetryWait; Retry-After longer than the
// wait left is not waited for.
func TestS3Retry(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fails      int    // answers before a 200
		retryAfter string // on each failing answer
		code       string
		wantStatus int
		wantHits   int64
	}{
		{"two slowdowns", 2, "", "SlowDown", 200, 3},
		{"internal error", 1, "0", "InternalError", 200, 2},
		{"out of retries", 10, "", "SlowDown", 503, 4},
		{"retry-after too long", 10, "30", "SlowDown", 503, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			p := s3Pair(t, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) <= int64(tc.fails) {
					if tc.retryAfter != "" {
						w.Header().Set("Retry-After", tc.retryAfter)
					}
					status := 503
					if tc.code == "InternalError" {
						status = 500
					}
					s3Error(w, status, tc.code)
					return
				}
				w.Header().Set("Cache-Control", "max-age=60")
				w.Write([]byte("ok"))
			}, nil)
			resp := p.get("/k")
			if resp.StatusCode() != tc.wantStatus || p.hits.Load() != tc.wantHits {
				t.Fatalf("status %d, bucket asked %d times; want %d, %d", resp.StatusCode(), p.hits.Load(), tc.wantStatus, tc.wantHits)
			}
			so := p.srv.set.Load().router.all[0].s3
			if so.c.throttled.Load() != uint64(min(tc.fails, int(tc.wantHits))) {
				t.Errorf("throttled %d", so.c.throttled.Load())
			}
			if got := testutil.ToFloat64(p.srv.m.originErrors[faultOf(ErrOriginThrottled)]); tc.wantStatus == 503 && got != 1 {
				t.Errorf("throttled origin errors %v", got)
			}
		})
	}
}

// TestS3StaleWhileThrottled: a stored copy is served while the bucket
// throttles.
func TestS3StaleWhileThrottled(t *testing.T) {
	var throttle atomic.Bool
	p := s3Pair(t, func(w http.ResponseWriter, r *http.Request) {
		if throttle.Load() {
			s3Error(w, 503, "SlowDown")
			return
		}
		w.Header().Set("Cache-Control", "max-age=10")
		w.Write([]byte("v1"))
	}, nil)
	p.get("/k")
	throttle.Store(true)
	p.clock.Advance(time.Minute)
	resp := p.get("/k")
	if resp.StatusCode() != 200 || string(resp.Body()) != "v1" {
		t.Fatalf("%d %q", resp.StatusCode(), resp.Body())
	}
}

// TestS3Credentials: credential and clock errors are 502, never stored,
// counted, and logged (at most once per s3LogEvery).
func TestS3Credentials(t *testing.T) {
	for _, code := range []string{"SignatureDoesNotMatch", "RequestTimeTooSkewed", "InvalidAccessKeyId", "NoSuchBucket"} {
		t.Run(code, func(t *testing.T) {
			var logs strings.Builder
			p := newPair(t, func(w http.ResponseWriter, r *http.Request) { s3Error(w, 403, code) }, func(o *Options) {
				o.Origins[0].S3 = &S3Options{Bucket: "media", Region: "r", AccessKeyID: "AK", SecretAccessKey: "SK"}
				o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})
			for range 3 {
				if resp := p.get("/k"); resp.StatusCode() != 502 {
					t.Fatalf("status %d", resp.StatusCode())
				}
			}
			if p.hits.Load() != 3 {
				t.Errorf("bucket asked %d times, want 3 (nothing stored)", p.hits.Load())
			}
			if got := strings.Count(logs.String(), code); got != 1 {
				t.Errorf("%d log lines naming %s, want 1:\n%s", got, code, logs.String())
			}
			if !strings.Contains(logs.String(), "REQ123") || !strings.Contains(logs.String(), s3Fixes[code][:10]) {
				t.Errorf("log without request id or fix:\n%s", logs.String())
			}
		})
	}
}

// TestS3VirtualHost: virtual addressing puts the bucket in the Host.
func TestS3VirtualHost(t *testing.T) {
	var host, uri atomic.Value
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		host.Store(r.Host)
		uri.Store(r.RequestURI)
		w.Write([]byte("x"))
	}, nil)
	// The fake listens on 127.0.0.1; "media.127.0.0.1" does not resolve,
	// so check the request the origin would send instead.
	o, err := newOrigin(OriginOptions{URL: p.origin.URL, S3: &S3Options{Bucket: "media", Region: "r", Addressing: S3Virtual,
		AccessKeyID: "AK", SecretAccessKey: "SK"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "media." + strings.TrimPrefix(p.origin.URL, "http://"); string(o.s3.host) != want || string(o.addr) != want || o.s3.prefix != "" {
		t.Fatalf("host %q addr %q prefix %q, want %q", o.s3.host, o.addr, o.s3.prefix, want)
	}
}

func TestS3RetryBudget(t *testing.T) {
	so := &s3Origin{}
	so.budget.Store(s3BudgetCap)
	n := 0
	for so.withdraw() {
		n++
	}
	if n != 10 {
		t.Fatalf("%d retries saved up, want 10", n)
	}
	for range 100 {
		so.deposit()
	}
	n = 0
	for so.withdraw() {
		n++
	}
	if n != 10 {
		t.Fatalf("%d retries after 100 first tries, want 10", n)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false}, {"0", 0, true}, {"3", 3 * time.Second, true}, {"-1", 0, false}, {"soon", 0, false},
		{"Wed, 02 Dec 2026 10:00:05 GMT", 5 * time.Second, true}, {"Wed, 02 Dec 2026 09:00:00 GMT", 0, true},
	} {
		if got, ok := retryAfter([]byte(tc.v), now); got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %v %v, want %v %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

// TestS3SentTwice: a request the proxy sends to the bucket a second time
// (exchange, after a 304 whose ETag selects nothing) names the same
// object: the rewrite of the client's path to the bucket's is not
// applied twice ("/media/media/k").
func TestS3SentTwice(t *testing.T) {
	var mu sync.Mutex
	var uris []string
	var etag atomic.Value
	etag.Store(`"a"`)
	p := s3Pair(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		uris = append(uris, r.RequestURI)
		mu.Unlock()
		verifySigned(t, r)
		if r.URL.Path != "/media/k%2Bx" && r.URL.RawPath != "/media/k%2Bx" {
			s3Error(w, 404, "NoSuchKey")
			return
		}
		w.Header().Set("Cache-Control", "max-age=1")
		if r.Header.Get("If-None-Match") != "" {
			w.Header().Set("ETag", `"b"`) // a replica that disagrees
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag.Load().(string))
		w.Write([]byte("object"))
	}, nil)
	if resp := p.get("/k+x"); resp.StatusCode() != 200 {
		t.Fatalf("first GET: %d", resp.StatusCode())
	}
	etag.Store(`"b"`)
	p.clock.Advance(5 * time.Second)
	resp := p.get("/k+x")
	mu.Lock()
	defer mu.Unlock()
	if resp.StatusCode() != 200 || string(resp.Body()) != "object" {
		t.Errorf("revalidated GET: %d %q", resp.StatusCode(), resp.Body())
	}
	if len(uris) != 3 {
		t.Errorf("bucket asked %d times, want 3: %q", len(uris), uris)
	}
	for _, u := range uris {
		if u != "/media/k%2Bx" {
			t.Errorf("bucket asked for %q, want /media/k%%2Bx (all: %q)", u, uris)
		}
	}
}
