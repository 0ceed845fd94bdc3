package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"strata/configs"
)

// writePair writes a self-signed certificate for cn and its key under
// dir and returns the TLS config naming them.
func writePair(t *testing.T, dir, cn string) configs.TLS {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{cn}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := configs.TLS{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem")}
	if err := os.WriteFile(c.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCertsReload: handshakes get the certificate loaded last; a pair
// that does not load leaves the current one in place.
func TestCertsReload(t *testing.T) {
	dir := t.TempDir()
	var c certs
	get := c.config().GetCertificate
	subject := func() string {
		t.Helper()
		cert, err := get(&tls.ClientHelloInfo{})
		if err != nil || cert == nil {
			t.Fatalf("GetCertificate: %v", err)
		}
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.Subject.CommonName
	}
	first := writePair(t, dir, "first.example")
	if err := c.load(first); err != nil {
		t.Fatal(err)
	}
	if got := subject(); got != "first.example" {
		t.Fatalf("serving %q", got)
	}
	writePair(t, dir, "second.example") // renewed under the same names
	if err := c.load(first); err != nil {
		t.Fatal(err)
	}
	if got := subject(); got != "second.example" {
		t.Errorf("after the renewal: serving %q, want second.example", got)
	}
	if err := os.WriteFile(first.KeyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.load(first); err == nil {
		t.Error("a broken key loaded")
	}
	if got := subject(); got != "second.example" {
		t.Errorf("after a broken pair: serving %q, want second.example still", got)
	}
}

// TestReloadMetric: both results are exported from the start, at zero,
// and pass the linter.
func TestReloadMetric(t *testing.T) {
	var l live
	l.init(&configs.Config{})
	l.reloadOK.Inc()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(l.reloads)
	want := `# HELP strata_config_reloads_total Config reloads (SIGHUP) by result: ok (applied, maybe with keys that need a restart kept), failed (nothing changed).
# TYPE strata_config_reloads_total counter
strata_config_reloads_total{result="failed"} 0
strata_config_reloads_total{result="ok"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", probs, err)
	}
}
