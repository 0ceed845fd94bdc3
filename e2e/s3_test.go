package e2e

// The S3 origin against a real S3 server: versitygw verifies every
// signature strata sends, serves ranges and conditionals, and with
// --max-requests answers 503 SlowDown. A counting proxy between strata
// and versitygw sees each request the bucket gets.

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/proxy/s3"
)

// awkwardKey returns the i-th test key: spaces, '+', '%', UTF-8,
// repeated slashes and reserved characters, in turn.
func awkwardKey(i int) string {
	forms := []string{
		"plain/%d.bin",
		"with space/file %d.txt",
		"plus+sign/a+b+%d",
		"percent/100%%-%d%%25",
		"utf8/café-ünïcödé-✓-%d",
		"repeated//slashes///%d",
		"reserved/=&;,:@$!*()'-%d",
		"emoji/😀-%d",
		"tilde~under_score-dash.dot/%d",
		"query?like#hash-%d",
	}
	return fmt.Sprintf(forms[i%len(forms)], i)
}

// s3ClientGet GETs key through strata, the path escaped as S3 would.
func s3ClientGet(t testing.TB, strataURL, key string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", strataURL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = string(s3.AppendEscaped([]byte("/"), []byte(key)))
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := s3Client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", key, err)
	}
	return resp, b
}

func objectBody(i int) []byte {
	n := 100 + (i*7919)%4000
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(i), 42))
	for j := range b {
		b[j] = byte(r.Uint32())
	}
	return b
}

// parallel runs fn(i) for i in [0, n) on w goroutines.
func parallel(n, w int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// TestS3Objects: objects with awkward names fetched through strata are
// byte-exact, the bucket sees one GET each, and a second pass costs it
// nothing. STRATA_S3_OBJECTS sets the count (default 1000; the issue's
// figure is 10000). Credentials come from the environment.
func TestS3Objects(t *testing.T) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("STRATA_S3_OBJECTS")); err == nil && v > 0 {
		n = v
	}
	vgw := startVersity(t)
	cp := startCountingProxy(t, vgw)
	t0 := time.Now()
	parallel(n, 16, func(i int) {
		s3Do(t, vgw, "PUT", awkwardKey(i), objectBody(i), http.StatusOK, "Cache-Control: max-age=3600")
	})
	t.Logf("uploaded %d objects in %v", n, time.Since(t0))
	st := startStrata(t, strataOpts{Config: s3StrataConfig(cp.Addr, ""), Mem: "256MiB",
		Env: []string{"AWS_ACCESS_KEY_ID=" + s3Key, "AWS_SECRET_ACCESS_KEY=" + s3Secret}})
	for pass := range 2 {
		t0 = time.Now()
		before := cp.total.Load()
		parallel(n, 16, func(i int) {
			key := awkwardKey(i)
			resp, b := s3ClientGet(t, st.URL, key)
			if resp.StatusCode != 200 || !bytes.Equal(b, objectBody(i)) {
				t.Errorf("pass %d: %q: %s, %d bytes, equal %v", pass, key, resp.Status, len(b), bytes.Equal(b, objectBody(i)))
			}
			for k := range resp.Header {
				if strings.HasPrefix(strings.ToLower(k), "x-amz-") {
					t.Errorf("%q: header %s passed on", key, k)
				}
			}
		})
		t.Logf("pass %d: %d objects in %v, bucket requests %d", pass, n, time.Since(t0), cp.total.Load()-before)
		if t.Failed() {
			return
		}
	}
	for i := range n {
		path := string(s3.AppendPath(nil, s3Bucket, []byte(awkwardKey(i))))
		if c := cp.count("GET", path); c != 1 {
			t.Errorf("%s: the bucket saw %d GETs, want 1", path, c)
		}
	}
	if got := cp.total.Load(); got != int64(n) {
		t.Errorf("bucket requests %d, want %d (one per object)", got, n)
	}
}

// TestS3Ranges: ranges of a multi-slice object are exact, cold and warm.
func TestS3Ranges(t *testing.T) {
	vgw := startVersity(t)
	cp := startCountingProxy(t, vgw)
	body := make([]byte, 5<<20+12345)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range body {
		body[i] = byte(r.Uint32())
	}
	s3Do(t, vgw, "PUT", "big/object one.bin", body, http.StatusOK, "Cache-Control: max-age=3600")
	st := startStrata(t, strataOpts{Config: s3StrataConfig(cp.Addr, "      access_key_id: "+s3Key+"\n      secret_access_key: "+s3Secret+"\n") +
		"cache:\n  slice_size: 1MiB\n"})
	size := int64(len(body))
	for _, rg := range [][2]int64{{0, 0}, {0, 99}, {1<<20 - 10, 1<<20 + 10}, {3 << 20, 4<<20 + 1}, {size - 100, size - 1}, {12345, size - 1}, {0, size - 1}} {
		for range 2 {
			resp, b := s3ClientGet(t, st.URL, "big/object one.bin", fmt.Sprintf("Range: bytes=%d-%d", rg[0], rg[1]))
			if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(b, body[rg[0]:rg[1]+1]) {
				t.Fatalf("range %d-%d: %s, %d bytes", rg[0], rg[1], resp.Status, len(b))
			}
			if want := fmt.Sprintf("bytes %d-%d/%d", rg[0], rg[1], size); resp.Header.Get("Content-Range") != want {
				t.Fatalf("Content-Range %q, want %q", resp.Header.Get("Content-Range"), want)
			}
		}
	}
	resp, b := s3ClientGet(t, st.URL, "big/object one.bin")
	if resp.StatusCode != 200 || !bytes.Equal(b, body) {
		t.Fatalf("whole: %s, %d bytes", resp.Status, len(b))
	}
	if etag := resp.Header.Get("ETag"); etag == "" {
		t.Errorf("no ETag passed on")
	}
	// Every slice came from the bucket at most once.
	if got := cp.total.Load(); got > int64(size>>20)+1 {
		t.Errorf("bucket requests %d for %d slices", got, size>>20+1)
	}
}

// TestS3MissingKey: a missing key asked 100 times at once costs the
// bucket one request, and is answered 404 from the cache afterwards.
func TestS3MissingKey(t *testing.T) {
	vgw := startVersity(t)
	cp := startCountingProxy(t, vgw)
	st := startStrata(t, strataOpts{Config: s3StrataConfig(cp.Addr, "      access_key_id: "+s3Key+"\n      secret_access_key: "+s3Secret+"\n")})
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, _ := s3ClientGet(t, st.URL, "no/such key")
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("status %s, want 404", resp.Status)
			}
		}()
	}
	close(start)
	wg.Wait()
	resp, _ := s3ClientGet(t, st.URL, "no/such key")
	if resp.StatusCode != 404 || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
		t.Errorf("after: %s, Cache-Status %q", resp.Status, resp.Header.Get("Cache-Status"))
	}
	if got := cp.total.Load(); got != 1 {
		t.Fatalf("the bucket saw %d requests for a missing key asked 101 times, want 1", got)
	}
	if got := metric(t, st.Admin, "strata_s3_negative_answers_total"); got != 1 {
		t.Errorf("strata_s3_negative_answers_total %v, want 1", got)
	}
	// Only reads reach an S3 origin.
	req, _ := http.NewRequest("DELETE", st.URL+"/no/such%20key", nil)
	if resp, err := s3Client.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %v %v, want 405", resp, err)
	}
	if got := cp.total.Load(); got != 1 {
		t.Errorf("a DELETE reached the bucket")
	}
}

// TestS3WrongSecret: a wrong secret is never a 200 and nothing is
// cached; the log says what is wrong and the metric counts it.
func TestS3WrongSecret(t *testing.T) {
	vgw := startVersity(t)
	cp := startCountingProxy(t, vgw)
	s3Do(t, vgw, "PUT", "secret.txt", []byte("top secret"), http.StatusOK)
	st := startStrata(t, strataOpts{Config: s3StrataConfig(cp.Addr, "      access_key_id: "+s3Key+"\n      secret_access_key: wrong\n")})
	for i := range 3 {
		resp, b := s3ClientGet(t, st.URL, "secret.txt")
		if resp.StatusCode == 200 || bytes.Contains(b, []byte("top secret")) {
			t.Fatalf("try %d: %s %q", i, resp.Status, b)
		}
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("try %d: %s, want 502", i, resp.Status)
		}
	}
	if got := cp.count("GET", "/media/secret.txt"); got != 3 {
		t.Errorf("bucket GETs %d, want 3: nothing may be cached", got)
	}
	if got := metric(t, st.Admin, "strata_s3_credential_errors_total"); got != 3 {
		t.Errorf("strata_s3_credential_errors_total %v, want 3", got)
	}
	if got := metric(t, st.Admin, `strata_origin_errors_total{kind="s3_credentials"}`); got != 3 {
		t.Errorf("origin errors s3_credentials %v, want 3", got)
	}
	out := st.Output()
	if !strings.Contains(out, "SignatureDoesNotMatch") || !strings.Contains(out, "secret access key") {
		t.Errorf("no log line naming the problem:\n%s", out)
	}
}

// TestS3Throttled: with versitygw answering SlowDown beyond a few
// requests in flight, clients of stale copies get no error, and the
// bucket sees at most 1.2 requests per miss.
func TestS3Throttled(t *testing.T) {
	vgw := startVersity(t, "--max-requests", "1", "--max-connections", "64")
	cp := startCountingProxy(t, vgw)
	const n = 200
	parallel(n, 2, func(i int) {
		for {
			// The uploads meet the limit too: retry them.
			if tryPut(vgw, awkwardKey(i), objectBody(i), "max-age=1") {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	cfg := s3StrataConfig(cp.Addr, "      access_key_id: "+s3Key+"\n      secret_access_key: "+s3Secret+"\n")
	st := startStrata(t, strataOpts{Config: cfg, Mem: "64MiB"})
	// Warm the cache, slowly enough for the limit.
	parallel(n, 2, func(i int) {
		for range 50 {
			if resp, b := s3ClientGet(t, st.URL, awkwardKey(i)); resp.StatusCode == 200 && bytes.Equal(b, objectBody(i)) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Errorf("%q never fetched", awkwardKey(i))
	})
	time.Sleep(1500 * time.Millisecond) // everything is stale now
	before := cp.total.Load()
	retries0 := metric(t, st.Admin, "strata_s3_retries_total")
	throttled0 := metric(t, st.Admin, "strata_s3_throttled_total")
	var errs, ok int
	var mu sync.Mutex
	parallel(4*n, 32, func(i int) {
		resp, b := s3ClientGet(t, st.URL, awkwardKey(i%n))
		mu.Lock()
		defer mu.Unlock()
		if resp.StatusCode != 200 || !bytes.Equal(b, objectBody(i%n)) {
			errs++
			if errs < 5 {
				t.Errorf("%q: %s %q", awkwardKey(i%n), resp.Status, b)
			}
			return
		}
		ok++
	})
	bucket := cp.total.Load() - before
	retries := metric(t, st.Admin, "strata_s3_retries_total") - retries0
	throttled := metric(t, st.Admin, "strata_s3_throttled_total") - throttled0
	misses := float64(bucket) - retries // first tries: one per miss or revalidation
	t.Logf("%d ok, %d errors; bucket requests %d (503: %d, 304: %d), throttled %v, retries %v, misses %v",
		ok, errs, bucket, cp.status(503), cp.status(304), throttled, retries, misses)
	if cp.status(304) == 0 {
		t.Errorf("no revalidation answered 304: S3's ETag did not validate the stored copies")
	}
	if throttled == 0 {
		t.Errorf("versitygw never throttled: the test proves nothing")
	}
	if float64(bucket) > 1.2*misses {
		t.Errorf("bucket requests %d > 1.2 × %v misses", bucket, misses)
	}
}

// tryPut is s3Do for loops that retry: false on any failure.
func tryPut(addr, key string, body []byte, cacheControl string) bool {
	path := s3.AppendPath(nil, s3Bucket, []byte(key))
	req, _ := http.NewRequest("PUT", "http://"+addr+"/", bytes.NewReader(body))
	req.URL.Opaque = string(path)
	date := s3.AppendDate(nil, time.Now())
	req.Header.Set(s3.HeaderDate, string(date))
	req.Header.Set(s3.HeaderContentSHA256, s3.UnsignedPayload)
	req.Header.Set("Authorization", string(s3Signer.AppendAuthorization(nil, "PUT", path, []byte(addr), date)))
	req.Header.Set("Cache-Control", cacheControl)
	resp, err := s3Client.Do(req)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == 200
}
