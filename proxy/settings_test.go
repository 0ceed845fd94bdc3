package proxy

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReloadInFlight: a request routed to origin A before a reload that
// moves the default origin to B finishes from A; the next request (a new
// URL) goes to B; the cache is kept across the reload.
func TestReloadInFlight(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
		cacheable("from A")(w, r)
	}, nil)
	b := httptest.NewServer(cacheable("from B"))
	defer b.Close()
	if r := p.get("/kept"); string(r.Body()) != "from A" {
		t.Fatalf("/kept: %q", r.Body())
	}
	slow := make(chan string)
	go func() { slow <- string(p.get("/slow").Body()) }()
	<-entered
	if err := p.srv.Reload(Options{Origins: []OriginOptions{{URL: b.URL}}}); err != nil {
		t.Fatal(err)
	}
	close(release)
	if got := <-slow; got != "from A" {
		t.Errorf("request in flight during the reload: %q, want from A", got)
	}
	if r := p.get("/new"); string(r.Body()) != "from B" {
		t.Errorf("after the reload: %q, want from B", r.Body())
	}
	r := p.get("/kept")
	if string(r.Body()) != "from A" || !strings.Contains(string(r.Header.Peek("Cache-Status")), "hit") {
		t.Errorf("/kept after the reload: %q %q, want the cached hit from A", r.Body(), r.Header.Peek("Cache-Status"))
	}
}

// TestReloadRefused: options that do not validate change nothing.
func TestReloadRefused(t *testing.T) {
	p := newPair(t, cacheable("from A"), nil)
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"no origins", Options{}},
		{"bad url", Options{Origins: []OriginOptions{{URL: "ftp://x"}}}},
		{"two defaults", Options{Origins: []OriginOptions{{URL: "http://a", Default: true}, {URL: "http://b", Default: true}}}},
		{"negative timeout", Options{Origins: []OriginOptions{{URL: "http://a"}}, FillTimeout: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := p.srv.Reload(tc.opts); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Reload = %v, want ErrInvalidOptions", err)
			}
			if got := p.srv.cfg().Origins[0].URL; got != p.origin.URL {
				t.Fatalf("origin after a refused reload: %q", got)
			}
			if r := p.get("/" + tc.name[:2]); string(r.Body()) != "from A" {
				t.Fatalf("served %q", r.Body())
			}
		})
	}
}

// TestReloadPurgeToken: the admin listener takes the new token at once
// and refuses the old one.
func TestReloadPurgeToken(t *testing.T) {
	p := newPair(t, cacheable("x"), func(o *Options) { o.PurgeToken = "old" })
	a := NewAdmin(p.srv, nil)
	defer a.Close()
	purge := func(token string) int {
		code, _ := adminDo(a, "POST", "/purge?url=http://example.com/x", "Bearer "+token)
		return code
	}
	if c := purge("old"); c == http.StatusUnauthorized {
		t.Fatalf("old token before the reload: %d", c)
	}
	if err := p.srv.Reload(Options{Origins: p.srv.cfg().Origins, PurgeToken: "new"}); err != nil {
		t.Fatal(err)
	}
	if c := purge("old"); c != http.StatusUnauthorized {
		t.Errorf("old token after the reload: %d, want 401", c)
	}
	if c := purge("new"); c == http.StatusUnauthorized || c == http.StatusForbidden {
		t.Errorf("new token after the reload: %d", c)
	}
}

// TestReloadUnderLoad (run it with -race): clients keep requesting while
// the settings are swapped again and again; every answer is whole.
func TestReloadUnderLoad(t *testing.T) {
	p := newPair(t, cacheable("body"), nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := p.get("/k" + string(rune('a'+c)) + string(rune('a'+i%8)))
				if r.StatusCode() != 200 || string(r.Body()) != "body" {
					errs <- r.String()
					return
				}
			}
		}()
	}
	for i := range 50 {
		opts := Options{Origins: []OriginOptions{{URL: p.origin.URL, ResponseTimeout: time.Duration(i+1) * time.Second}},
			FillTimeout: time.Duration(i+1) * time.Minute, ReadTimeout: time.Duration(i+1) * time.Second}
		if err := p.srv.Reload(opts); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("bad answer during reloads: %s", e)
	}
	if got := p.srv.cfg().FillTimeout; got != 50*time.Minute {
		t.Errorf("fill timeout after the reloads: %v", got)
	}
}

// TestReloadableFieldsOnly: no code outside settings.go reads a
// reloadable field from s.opts (the copy fixed at New), which would
// silently ignore reloads. A new reloadable field belongs in this list
// and in reloadable.
func TestReloadableFieldsOnly(t *testing.T) {
	re := regexp.MustCompile(`\bs\.opts\.(Origins|Policy|Key|MaxVariants|MaxFills|MaxLargeFills|FillTimeout|FillLagWait|` +
		`RevalidateKeep|StaleIfUnreachable|ReadTimeout|WriteTimeout|ClientIdleTimeout|PurgeToken)\b|\bs\.router\b`)
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := f.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || name == "settings.go" {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if re.MatchString(line) {
				t.Errorf("%s:%d reads a reloadable setting from s.opts: use st.set.opts or s.cfg(): %s", name, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestReloadsKeepBounded: reloads keep at most maxRetired replaced routers
// (each reload used to keep one for the life of the process), and the S3
// origins of every snapshot count into the Server's one set of counters,
// so a reload neither resets the S3 metrics nor needs the old origins.
func TestReloadsKeepBounded(t *testing.T) {
	p := newPair(t, cacheable("x"), nil)
	origins := append([]OriginOptions(nil), p.srv.cfg().Origins...)
	origins[0].S3 = &S3Options{Bucket: "media", Region: "r", AccessKeyID: "AK", SecretAccessKey: "SK"}
	origins[0].HostHeader = HostOrigin
	for i := range 3 * maxRetired {
		if err := p.srv.Reload(Options{Origins: origins}); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		if so := p.srv.set.Load().router.all[0].s3; so == nil || so.c != p.srv.s3c {
			t.Fatalf("reload %d: the S3 origin does not count into the Server's counters", i)
		}
	}
	p.srv.reloadMu.Lock()
	n := len(p.srv.retired)
	p.srv.reloadMu.Unlock()
	if n != maxRetired {
		t.Errorf("%d replaced routers kept after %d reloads, want %d", n, 3*maxRetired, maxRetired)
	}
}
