package httpcache

import (
	"bytes"
	"testing"
)

func TestFields(t *testing.T) {
	conn := []byte("close, X-Hop")
	for _, tc := range []struct {
		name                   string
		hop, stored, updatable bool
		notModified            bool
	}{
		{"Content-Type", false, true, true, false},
		{"cache-control", false, true, true, true},
		{"ETag", false, true, true, true},
		{"Connection", true, false, false, false},
		{"keep-alive", true, false, false, false},
		{"Proxy-Authenticate", true, false, false, false},
		{"x-hop", true, false, false, false}, // listed in Connection
		{"Content-Length", false, false, false, false},
		{"Age", false, false, false, false},
		{"Alt-Svc", false, false, false, false},
		{"Content-Encoding", false, true, false, false},
		{"content-md5", false, true, false, false},
		{"Date", false, true, true, true},
	} {
		k := []byte(tc.name)
		if got := HopByHop(k, conn); got != tc.hop {
			t.Errorf("HopByHop(%q) = %v", tc.name, got)
		}
		if got := StoredField(k, conn); got != tc.stored {
			t.Errorf("StoredField(%q) = %v", tc.name, got)
		}
		if got := UpdatableField(k, conn); got != tc.updatable {
			t.Errorf("UpdatableField(%q) = %v", tc.name, got)
		}
		if got := NotModifiedField(k); got != tc.notModified {
			t.Errorf("NotModifiedField(%q) = %v", tc.name, got)
		}
	}
}

// refHopByHop and refStoredField are HopByHop and StoredField as they were
// written first, with bytes.EqualFold for every name (hopByHopFold is that
// code, kept for names that are not ASCII): what the length-first versions
// must answer.
func refHopByHop(key, conn []byte) bool { return hopByHopFold(key, conn) }

func refStoredField(key, conn []byte) bool {
	return !refHopByHop(key, conn) && !bytes.EqualFold(key, HeaderContentLength) &&
		!bytes.EqualFold(key, HeaderAge) && !bytes.EqualFold(key, headerAltSvc)
}

// TestFieldsAsFolded: HopByHop and StoredField answer as bytes.EqualFold
// compares names, for names in every case, near misses, and names that
// match only under Unicode folding (the Kelvin sign and the long s).
func TestFieldsAsFolded(t *testing.T) {
	conn := []byte(" X-Hop ,close,\u212aeep-x")
	for _, name := range []string{
		"TE", "te", "Te", "TF", "Trailer", "trailer", "Upgrade", "UPGRADE", "Upgradf",
		"Connection", "connection", "Keep-Alive", "keep-alive", "Keep-Alivf", "Transfer-Encoding",
		"transfer-encoding", "Proxy-", "proxy-authorization", "Proxy", "Prox-y-", "Content-Length",
		"content-length", "Content-Lengths", "Age", "age", "Ag", "Alt-Svc", "alt-svc", "X-Hop", "x-hop",
		"keep-x", "Close", "Date", "Etag", "", "\u212aeep-Alive", "\u212aEEP-ALIVE", "Tran\u017ffer-Encoding",
		"Alt-\u017fvc", "\u212aeep-x", "Content-Type", "X-\xff",
	} {
		k := []byte(name)
		if got, want := HopByHop(k, conn), refHopByHop(k, conn); got != want {
			t.Errorf("HopByHop(%q) = %v, want %v", name, got, want)
		}
		if got, want := StoredField(k, conn), refStoredField(k, conn); got != want {
			t.Errorf("StoredField(%q) = %v, want %v", name, got, want)
		}
	}
}

// FuzzFields: HopByHop and StoredField answer as bytes.EqualFold compares
// names, for any name and Connection list.
func FuzzFields(f *testing.F) {
	f.Add([]byte("Keep-Alive"), []byte("close"))
	f.Add([]byte("\u212aeep-Alive"), []byte(""))
	f.Add([]byte("x-hop"), []byte("a, X-Hop"))
	f.Fuzz(func(t *testing.T, key, conn []byte) {
		if got, want := HopByHop(key, conn), refHopByHop(key, conn); got != want {
			t.Fatalf("HopByHop(%q, %q) = %v, want %v", key, conn, got, want)
		}
		if got, want := StoredField(key, conn), refStoredField(key, conn); got != want {
			t.Fatalf("StoredField(%q, %q) = %v, want %v", key, conn, got, want)
		}
	})
}
