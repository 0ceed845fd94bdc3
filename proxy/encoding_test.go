package proxy

import (
	"net/http"
	"sync"
	"testing"
)

// TestAcceptEncodingSpellings: twenty spellings of Accept-Encoding seen
// from browsers, HTTP libraries and bots, on a URL that varies on it, cost
// one origin fetch per normalised preference (br, gzip, identity): three
// in all; the origin sees only the normalised values.
func TestAcceptEncodingSpellings(t *testing.T) {
	spellings := []string{
		"gzip, deflate, br, zstd", // Chrome
		"gzip, deflate, br",       // Firefox, Safari
		"br, gzip, deflate",
		"gzip,deflate,br",
		"br;q=1.0, gzip;q=0.8, *;q=0.1", // Opera
		"GZIP, BR",
		"*",
		"gzip, br;q=0.9",
		"gzip",            // curl --compressed (older), Go's net/http
		"gzip, deflate",   // python-requests
		"x-gzip, deflate", // old agents
		"deflate, gzip;q=1.0, *;q=0.5, br;q=0",
		"gzip;q=1.0, identity; q=0.5, *;q=0",
		"br;q=0, gzip",
		"identity", // wget
		"",
		"-", // no field at all
		"deflate",
		"compress, zstd;q=1",
		"gzip;q=0, br;q=0",
	}
	var mu sync.Mutex
	seen := map[string]int{}
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("Accept-Encoding")]++
		mu.Unlock()
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Vary", "Accept-Encoding")
		_, _ = w.Write([]byte("enc=" + r.Header.Get("Accept-Encoding")))
	}, nil)
	want := map[string]string{"gzip, deflate, br, zstd": "br", "gzip": "gzip", "identity": "identity", "br;q=0, gzip": "gzip"}
	for _, ae := range spellings {
		var kv []string
		if ae != "-" {
			kv = []string{"Accept-Encoding", ae}
		}
		r := p.gets("/ae", kv...)
		if w, ok := want[ae]; ok && string(r.Body()) != "enc="+w {
			t.Errorf("%q: served %q, want enc=%s", ae, r.Body(), w)
		}
	}
	if n := p.hits.Load(); n != 3 {
		t.Errorf("20 spellings cost %d origin fetches, want 3", n)
	}
	t.Logf("20 Accept-Encoding spellings: %d origin fetches; origin saw %v", p.hits.Load(), seen)
	for v := range seen {
		if v != "br" && v != "gzip" && v != "identity" {
			t.Errorf("origin saw Accept-Encoding %q", v)
		}
	}
}
