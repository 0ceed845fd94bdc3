package httpcache

import "testing"

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
