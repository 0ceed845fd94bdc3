package e2e

// Operating strata through the real binary: purge on the admin listener,
// -check-config, exit codes, the TLS listener, and a raw block device.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProxyPurge: POST /purge needs the bearer token; with it the object
// is gone and the next request is a miss. Without a configured token,
// purge is refused.
func TestProxyPurge(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Config: fmt.Sprintf("origins: [{url: %s}]\nadmin: {purge_token: s3cret}\n", o.URL("origin"))})
	const pq = "/obj/2k?max-age=600"
	get(t, s.URL+pq)
	purge := s.Admin + "/purge?url=" + s.URL + pq
	for _, tc := range []struct {
		name   string
		args   []string
		status int
	}{
		{"no token", nil, 401},
		{"wrong token", []string{"-H", "Authorization: Bearer nope"}, 401},
		{"token", []string{"-H", "Authorization: Bearer s3cret"}, 200},
		{"already gone", []string{"-H", "Authorization: Bearer s3cret"}, 404},
	} {
		r := curl(t, append(append([]string{"-X", "POST"}, tc.args...), purge)...)
		if r.Status != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, r.Status, tc.status, r.Body)
		}
	}
	resp, _ := get(t, s.URL+pq)
	if !isMiss(resp.Header) {
		t.Errorf("after purge: Cache-Status %q, want a miss", cacheStatus(resp.Header))
	}
	if n := originCount(t, o, pq); n != 2 {
		t.Errorf("origin saw %d requests, want 2", n)
	}

	plain := startStrata(t, strataOpts{Origin: o.URL("origin")})
	r := curl(t, "-X", "POST", "-H", "Authorization: Bearer s3cret", plain.Admin+"/purge?url="+plain.URL+pq)
	if r.Status != 403 {
		t.Errorf("purge without a configured token: status %d, want 403", r.Status)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if r := curl(t, plain.Admin+path); r.Status != 200 {
			t.Errorf("%s: status %d", path, r.Status)
		}
	}
}

// TestCheckConfig: -check-config prints every problem with its line and
// exits 2; a good config prints "config ok" and exits 0. Bad flags exit 2,
// a listener that cannot bind exits 1.
func TestCheckConfig(t *testing.T) {
	t.Parallel()
	bin := strataBin(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("listen: \":8080\"\norigins:\n  - url: ftp://x\ncache:\n  memory:\n    capacity: lots\nlimits:\n  nonsense: 1\n"), 0o644)
	out, code := runStrata(t, bin, "-check-config", "-config", bad)
	if code != 2 {
		t.Errorf("bad config: exit %d, want 2; output:\n%s", code, out)
	}
	for _, want := range []string{"bad.yaml:3:", "bad.yaml:6:", "bad.yaml:8:"} {
		if !strings.Contains(out, want) {
			t.Errorf("bad config: output lacks %q:\n%s", want, out)
		}
	}
	if out, code := runStrata(t, bin, "-check-config"); code != 0 || !strings.Contains(out, "config ok") {
		t.Errorf("default config: exit %d, output %q; want 0 and config ok", code, out)
	}
	if out, code := runStrata(t, bin, "-check-config", "-mem", "many"); code != 2 || !strings.Contains(out, "-mem") {
		t.Errorf("-mem many: exit %d, output %q; want 2 naming -mem", code, out)
	}
	if _, code := runStrata(t, bin, "-no-such-flag"); code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, code = runStrata(t, bin, "-listen", ln.Addr().String(), "-admin-listen", "127.0.0.1:0",
		"-cache-path", filepath.Join(dir, "c.cache"), "-cache-size", "128MiB")
	if code != 1 || !strings.Contains(out, "address already in use") {
		t.Errorf("busy port: exit %d, want 1; output:\n%s", code, out)
	}
}

// runStrata runs strata to completion (10 s at most) and returns its
// combined output and exit code.
func runStrata(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("strata %v: %v", args, err)
	}
	return string(out), 0
}

// TestProxyTLS: the optional HTTPS listener serves with the configured
// certificate (a self-signed pair made here) and caches like the plain one.
func TestProxyTLS(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	s := startStrata(t, strataOpts{Dir: dir, Config: fmt.Sprintf(
		"origins: [{url: %s}]\ntls: {listen: \"127.0.0.1:0\", cert_file: %s, key_file: %s}\n", o.URL("origin"), cert, key)})
	var https string
	for _, l := range s.Listeners {
		if l.Name == "strata" && l.Scheme == "https" {
			https = "https://" + l.Addr
		}
	}
	if https == "" {
		t.Fatalf("no https listener logged: %v", s.Listeners)
	}
	for i, want := range []string{"stored", "hit"} {
		r := curl(t, "--cacert", cert, https+"/obj/1k?max-age=60")
		if r.Exit != 0 || r.Status != 200 || len(r.Body) != 1024 {
			t.Fatalf("#%d: curl exit %d (%s) status %d", i, r.Exit, r.Stderr, r.Status)
		}
		wantStatus(t, fmt.Sprintf("https #%d", i), r.Header, want)
	}
	if out, code := runStrata(t, strataBin(t), "-check-config", "-config", filepath.Join(dir, "strata.yaml")); code != 0 {
		t.Errorf("check-config of the TLS config: exit %d:\n%s", code, out)
	}
	os.Remove(key)
	if out, code := runStrata(t, strataBin(t), "-check-config", "-config", filepath.Join(dir, "strata.yaml")); code != 2 || !strings.Contains(out, "tls.key_file") {
		t.Errorf("missing key file: exit %d, want 2 naming tls.key_file:\n%s", code, out)
	}
}

// selfSigned writes a self-signed ECDSA certificate for 127.0.0.1 and its
// key as PEM files in dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "strata-e2e"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile
}

// TestProxyBlockDevice: strata on a raw block device (a loop device over
// a file; needs root and /dev/loop-control) stores evicted objects on it
// and answers disk hits. The loop device is always detached.
func TestProxyBlockDevice(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to attach a loop device")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skip("no /dev/loop-control: loop devices unavailable here")
	}
	losetup, err := exec.LookPath("losetup")
	if err != nil {
		t.Skip("losetup not installed (apt-get install mount)")
	}
	dir := t.TempDir()
	backing := filepath.Join(dir, "backing")
	if err := os.WriteFile(backing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(backing, 128<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(losetup, "--find", "--show", backing).CombinedOutput()
	if err != nil {
		t.Skipf("losetup --find --show: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command(losetup, "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin"), Dir: dir, Mem: "4MiB",
		Args: []string{"-cache-path", dev, "-cache-size", "0"}})
	if !strings.Contains(s.Output(), "cache device opened path="+dev) {
		t.Fatalf("strata did not open %s; output:\n%s", dev, s.Output())
	}
	const pq = "/obj/200k/cold?max-age=600"
	get(t, s.URL+pq)
	evictToDisk(t, s, 40)
	resp, body := awaitDiskHit(t, s.URL+pq)
	wantStatus(t, "on a block device", resp.Header, "hit", "detail=disk")
	if len(body) != 200<<10 {
		t.Errorf("disk hit: %d bytes", len(body))
	}
	if err := s.Stop(); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
}
