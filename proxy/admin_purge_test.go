package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// taggedOrigin serves cacheable responses tagged by path: /red/* carries
// Surrogate-Key "red all", /blue/* Cache-Tag "blue, all".
func taggedOrigin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "max-age=600")
	switch {
	case strings.HasPrefix(r.URL.Path, "/red/"):
		w.Header().Set("Surrogate-Key", "red all")
	case strings.HasPrefix(r.URL.Path, "/blue/"):
		w.Header().Set("Cache-Tag", "blue, all")
	}
	_, _ = w.Write([]byte("body of " + r.URL.Path))
}

const token = "Bearer t0k"

// settle waits until no fill runs and no compression (compressLater).
func (p *pair) settle() {
	waitFor(p.t, func() bool { return p.srv.nfills.Load() == 0 && len(p.srv.cz.slots) == 0 })
}

// cached reports whether path is answered from the cache.
func (p *pair) cached(path string) bool {
	p.t.Helper()
	r := p.get(path)
	defer fasthttp.ReleaseResponse(r)
	p.settle()
	return strings.Contains(string(r.Header.Peek("Cache-Status")), "; hit")
}

func TestAdminPurgeTagPrefixURL(t *testing.T) {
	p := newPair(t, taggedOrigin, func(o *Options) { o.PurgeToken = "t0k" })
	a := NewAdmin(p.srv, nil)
	paths := []string{"/red/1", "/red/2", "/blue/1", "/blue/2", "/img/a", "/img/b", "/plain"}
	warm := func() {
		for _, path := range paths {
			p.cached(path)
		}
		p.clock.Advance(time.Second)
	}
	warm()
	for _, tc := range []struct {
		name, query string
		status      int
		purged      []string // now misses; every other path still hits
		removed     int
	}{
		{"tag by surrogate key", "tag=red", 200, []string{"/red/1", "/red/2"}, 2},
		{"tag by cache-tag", "tag=blue", 200, []string{"/blue/1", "/blue/2"}, 2},
		{"two tags", "tag=red&tag=blue", 200, []string{"/red/1", "/red/2", "/blue/1", "/blue/2"}, 4},
		{"shared tag", "tag=all", 200, []string{"/red/1", "/red/2", "/blue/1", "/blue/2"}, 4},
		{"unknown tag", "tag=green", 200, nil, 0},
		{"prefix", "prefix=http://example.com/img/", 200, []string{"/img/a", "/img/b"}, 0},
		{"host prefix", "prefix=http://example.com", 200, paths, 0},
		{"other host prefix", "prefix=http://other.example/", 200, nil, 0},
		{"url", "url=http://example.com/plain", 200, []string{"/plain"}, 0},
		{"url not cached", "url=http://example.com/nothing", 404, nil, 0},
		{"bad tag", "tag=a%20b", 400, nil, 0},
		{"bad prefix", "prefix=/img/", 400, nil, 0},
		{"no argument", "", 400, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warm()
			code, body := adminDo(a, "POST", "/purge?"+tc.query, token)
			if code != tc.status {
				t.Fatalf("status %d %s, want %d", code, body, tc.status)
			}
			var ans purgeAnswer
			if err := json.Unmarshal([]byte(body), &ans); err != nil {
				t.Fatalf("answer %q: %v", body, err)
			}
			if ans.Removed != tc.removed {
				t.Errorf("removed %d, want %d (%s)", ans.Removed, tc.removed, body)
			}
			p.clock.Advance(time.Second)
			for _, path := range paths {
				want := !contains(tc.purged, path)
				if got := p.cached(path); got != want {
					t.Errorf("%s cached = %v, want %v", path, got, want)
				}
			}
		})
	}
	if code, _ := adminDo(a, "POST", "/purge?tag=red", "Bearer nope"); code != 401 {
		t.Errorf("wrong token: %d", code)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestPurgeSurvivesRestart: a purge by tag and by prefix hides records
// that stay in the store (the tag index is gone after a restart) once the
// Server is rebuilt on the same store and state file.
func TestPurgeSurvivesRestart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "purge.state")
	mod := func(o *Options) { o.PurgeToken = "t0k"; o.Purge.StateFile = state; o.Purge.TagIndexBytes = -1 }
	p := newPair(t, taggedOrigin, mod)
	for _, path := range []string{"/red/1", "/img/a", "/plain"} {
		p.cached(path)
	}
	a := NewAdmin(p.srv, nil)
	if code, body := adminDo(a, "POST", "/purge?tag=red&prefix=http://example.com/img/", token); code != 200 {
		t.Fatalf("purge: %d %s", code, body)
	}
	n := p.store.Len()
	opts := p.srv.opts
	opts.Registerer = nil
	srv, err := New(p.store, opts) // a restart: same store and state file
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 || p.store.Len() != 3 {
		t.Fatalf("store holds %d records, want 3 (hidden, not removed)", n)
	}
	for _, tc := range []struct {
		path   string
		hidden bool
	}{{"/red/1", true}, {"/img/a", true}, {"/plain", false}} {
		st := &reqState{}
		st.key = append(st.key, "http://example.com "+tc.path...)
		st.mkey = metaKey(nil, st.key)
		val, _, ok := p.store.Get(st.mkey, nil)
		if !ok || decodeObject(&st.obj, val) != nil {
			t.Fatalf("%s: record missing", tc.path)
		}
		if got := srv.purged(&st.obj, st.key); got != tc.hidden {
			t.Errorf("%s purged after restart = %v, want %v", tc.path, got, tc.hidden)
		}
	}
	_ = srv.Close(t.Context())
}

// TestPurgeNotSaved: a purge whose state file cannot be written (here the
// directory became a file; a full disk fails the same write) answers 500
// with the error, logs it once per failed purge, and still holds in
// memory.
func TestPurgeNotSaved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	p := newPair(t, taggedOrigin, func(o *Options) {
		o.PurgeToken, o.Purge.StateFile = "t0k", filepath.Join(dir, "purge.state")
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	for _, path := range []string{"/red/1", "/img/a"} {
		p.cached(path)
	}
	p.clock.Advance(time.Second)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil { // CreateTemp in it fails
		t.Fatal(err)
	}
	a := NewAdmin(p.srv, nil)
	for i, q := range []string{"tag=red", "prefix=http://example.com/img/"} {
		code, body := adminDo(a, "POST", "/purge?"+q, token)
		var ans purgeAnswer
		if err := json.Unmarshal([]byte(body), &ans); err != nil || code != 500 || !strings.Contains(ans.Error, "proxy: purge state: ") {
			t.Errorf("%s: %d %s, want 500 naming the state file error", q, code, body)
		}
		if n := strings.Count(logs.String(), "proxy: purge not saved"); n != i+1 {
			t.Errorf("after %s: %d log lines, want %d:\n%s", q, n, i+1, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "not a directory") {
		t.Errorf("log lacks the error:\n%s", logs.String())
	}
	p.clock.Advance(time.Second)
	for _, path := range []string{"/red/1", "/img/a"} {
		if p.cached(path) {
			t.Errorf("%s still cached: the purge must hold in memory", path)
		}
	}
}

// TestPurgeRefusedAfterClose: once the Server is closed (the store is
// closing behind it at shutdown), a purge is refused with 503 instead of
// reporting a removal the store may not keep.
func TestPurgeRefusedAfterClose(t *testing.T) {
	p := newPair(t, taggedOrigin, func(o *Options) { o.PurgeToken = "t0k" })
	p.cached("/red/1")
	a := NewAdmin(p.srv, nil)
	if err := p.srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"url=http://example.com/red/1", "tag=red", "prefix=http://example.com/red/"} {
		if code, body := adminDo(a, "POST", "/purge?"+q, token); code != 503 || !strings.Contains(body, "shutting down") {
			t.Errorf("%s after Close: %d %s, want 503", q, code, body)
		}
	}
}
