package e2e

import (
	"bufio"
	"errors"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// curlResult is what the real curl saw.
type curlResult struct {
	Status int         // of the last response (after redirects or 100 Continue); 0 if none
	Proto  string      // "HTTP/1.1"
	Header http.Header // of the last response, canonical keys
	Body   []byte
	Exit   int    // curl's exit code: 0 ok, 7 connect failed, 18 partial body, 28 timeout, 52 empty reply
	Stderr string // curl's error message, if any
}

// curl runs the real curl with args (URL included) and returns what it
// saw; it does not fail the test on a non-zero exit, so tests can assert
// one. With -I (HEAD), Body is nil. It adds -sS, --max-time 30, -D and -o, so args must not set those.
// It skips the test when curl is not installed.
func curl(t testing.TB, args ...string) curlResult {
	t.Helper()
	bin, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not found in PATH: these e2e tests drive the binaries with the real curl (apt-get install curl)")
	}
	dir := t.TempDir()
	hdr, body := filepath.Join(dir, "headers"), filepath.Join(dir, "body")
	full := append([]string{"-sS", "--max-time", "30", "-D", hdr, "-o", body}, args...)
	cmd := exec.Command(bin, full...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	res := curlResult{Header: http.Header{}, Stderr: strings.TrimSpace(stderr.String())}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.Exit = ee.ExitCode()
	case err != nil:
		t.Fatalf("curl %v: %v", args, err)
	}
	res.Body, _ = os.ReadFile(body)
	if slices.Contains(args, "-I") || slices.Contains(args, "--head") {
		res.Body = nil // curl writes the headers there; a HEAD response has no body
	}
	if raw, err := os.ReadFile(hdr); err == nil {
		res.parseHeaders(string(raw))
	}
	return res
}

// parseHeaders reads the last header block of a -D dump.
func (r *curlResult) parseHeaders(raw string) {
	i := strings.LastIndex(raw, "HTTP/")
	for i > 0 && raw[i-1] != '\n' { // an "HTTP/" inside a header value
		i = strings.LastIndex(raw[:i], "HTTP/")
	}
	if i < 0 {
		return
	}
	tp := textproto.NewReader(bufio.NewReader(strings.NewReader(raw[i:])))
	status, err := tp.ReadLine()
	if err != nil {
		return
	}
	f := strings.Fields(status)
	if len(f) >= 2 {
		r.Proto = f[0]
		r.Status, _ = strconv.Atoi(f[1])
	}
	if h, err := tp.ReadMIMEHeader(); err == nil || len(h) > 0 {
		r.Header = http.Header(h)
	}
}
