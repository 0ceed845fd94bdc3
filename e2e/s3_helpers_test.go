package e2e

// Helpers of the S3 origin tests (s3_test.go): a versitygw server
// (github.com/versity/versitygw, a real S3 API that verifies SigV4) over a
// temporary directory, a counting proxy between strata and it, and
// uploads signed with strata's own signer.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"strata/proxy/s3"
)

const (
	s3Key    = "STRATAE2EKEY"
	s3Secret = "strata-e2e-secret-key"
	s3Region = "us-east-1"
	s3Bucket = "media"
)

// versityBin finds the versitygw binary `make test` installs (PATH, GOBIN
// or GOPATH/bin), or skips the test saying how to get it.
func versityBin(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	var dirs []string
	for _, v := range []string{"GOBIN", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		if d := strings.TrimSpace(string(out)); err == nil && d != "" {
			if v == "GOPATH" {
				d = filepath.Join(strings.Split(d, string(os.PathListSeparator))[0], "bin")
			}
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		if p := filepath.Join(d, "versitygw"); isExecutable(p) {
			return p
		}
	}
	t.Skip("versitygw not found (PATH, GOBIN, GOPATH/bin) and not installed: `make test` installs it with " +
		"go install github.com/versity/versitygw/cmd/versitygw@v1.8.0; the S3 origin e2e tests need it")
	return ""
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// startVersity starts versitygw on a free loopback port over a new
// directory holding the bucket s3Bucket and returns its host:port.
func startVersity(t testing.TB, args ...string) string {
	t.Helper()
	bin := versityBin(t)
	dir := t.TempDir()
	addr := freePort(t)
	all := append([]string{"-a", s3Key, "-s", s3Secret, "-p", addr, "--keep-alive", "--quiet", "--region", s3Region}, args...)
	cmd := exec.Command(bin, append(all, "posix", dir)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("versitygw output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("versitygw exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw not listening on %s after 15s: %s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	s3Do(t, addr, "PUT", "", nil, http.StatusOK) // create the bucket
	return addr
}

// s3Client talks to the test's S3 servers, with room for the uploads'
// concurrency.
var s3Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}

var s3Signer = s3.NewSigner(s3.Credentials{AccessKeyID: s3Key, SecretAccessKey: s3Secret}, s3Region)

// s3Do sends a request signed with strata's signer for key of s3Bucket
// (key "": the bucket) to addr, and checks its status.
func s3Do(t testing.TB, addr, method, key string, body []byte, want int, headers ...string) []byte {
	t.Helper()
	path := s3.AppendPath(nil, s3Bucket, []byte(key))
	if key == "" {
		path = path[:len(path)-1]
	}
	req, err := http.NewRequest(method, "http://"+addr+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = string(path) // sent as is: the signed bytes
	date := s3.AppendDate(nil, time.Now())
	req.Header.Set(s3.HeaderDate, string(date))
	req.Header.Set(s3.HeaderContentSHA256, s3.UnsignedPayload)
	req.Header.Set("Authorization", string(s3Signer.AppendAuthorization(nil, method, path, []byte(addr), date)))
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := s3Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s %s", method, path, resp.Status, b)
	}
	return b
}

// countingProxy forwards to an S3 server and counts what passes: per
// method and raw path, and statuses.
type countingProxy struct {
	URL      string // http://host:port
	Addr     string // host:port
	mu       sync.Mutex
	paths    map[string]int
	total    atomic.Int64
	bytes    atomic.Int64  // response body bytes passed on
	delay    time.Duration // added before each request is forwarded: a far bucket's first-byte time
	rate     float64       // bytes per second each response body is paced to, when > 0: one bucket stream's speed
	statuses sync.Map      // int -> *atomic.Int64
}

func startCountingProxy(t testing.TB, target string) *countingProxy {
	t.Helper()
	cp := &countingProxy{paths: map[string]int{}}
	u, _ := url.Parse("http://" + target)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 256}
	rp.ModifyResponse = func(r *http.Response) error {
		v, _ := cp.statuses.LoadOrStore(r.StatusCode, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		r.Body = &countingBody{ReadCloser: r.Body, n: &cp.bytes, rate: cp.rate, start: time.Now()}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cp.total.Add(1)
		cp.mu.Lock()
		cp.paths[r.Method+" "+r.URL.EscapedPath()]++
		cp.mu.Unlock()
		if cp.delay > 0 {
			time.Sleep(cp.delay)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cp.URL = srv.URL
	cp.Addr = strings.TrimPrefix(srv.URL, "http://")
	return cp
}

// count returns how many requests for method and the raw path passed.
func (cp *countingProxy) count(method, path string) int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.paths[method+" "+path]
}

func (cp *countingProxy) status(code int) int64 {
	if v, ok := cp.statuses.Load(code); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

// s3StrataConfig is a strata config with one S3 origin at endpoint. The
// objects' freshness comes from the Cache-Control stored with them.
func s3StrataConfig(endpoint, extra string) string {
	return fmt.Sprintf(`origins:
  - name: bucket
    url: http://%s
    host_header: origin
    s3:
      bucket: %s
      region: %s
%s`, endpoint, s3Bucket, s3Region, extra)
}

type countingBody struct {
	io.ReadCloser
	n     *atomic.Int64
	rate  float64 // bytes per second, when > 0
	start time.Time
	sent  int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	b.sent += int64(n)
	if b.rate > 0 {
		due := b.start.Add(time.Duration(float64(b.sent) / b.rate * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
	}
	return n, err
}
