package e2e

// SIGHUP reloads the config of the real binary: under load, with a
// broken file, and with changes that must take effect.

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// reloadYAML is a config with origin url, purge token and log level.
func reloadYAML(url, token, level string, fillTimeout string) string {
	return fmt.Sprintf("origins: [{name: o, url: %q}]\nadmin: {purge_token: %q}\nlog: {level: %s}\nlimits: {fill_timeout: %s}\n",
		url, token, level, fillTimeout)
}

// hup rewrites s's config file with yaml, sends SIGHUP and waits for the
// reload's outcome line (want: "reload: config applied" or "reload:
// config refused"), the n-th of its kind.
func hup(t *testing.T, s *strata, yaml, want string, n int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.Dir, "strata.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(s.Output(), want) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %q (#%d) after SIGHUP; output:\n%s", want, n, s.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// purgeStatus POSTs a URL purge with token and returns the status code.
func purgeStatus(t *testing.T, s *strata, token, url string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.Admin+"/purge?url="+url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestReloadUnderLoad: five SIGHUPs, each changing reloadable settings,
// while 4 clients loop over 20 cached URLs: every response is a whole 200,
// the cache is kept (the origin saw each URL once), and each reload
// counted ok.
func TestReloadUnderLoad(t *testing.T) {
	a, b := startOrigin(t), startOrigin(t)
	s := startStrata(t, strataOpts{Config: reloadYAML(a.URL("origin"), "one", "info", "10m")})
	const urls = 20
	path := func(i int) string { return fmt.Sprintf("/obj/4k/warm%d?max-age=600", i) }
	for i := range urls {
		if resp, _ := get(t, s.URL+path(i)); resp.StatusCode != 200 {
			t.Fatalf("warm %d: %s", i, resp.Status)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	counts := make([]int, 4)
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Get(s.URL + path((c*7+i)%urls))
				if err == nil {
					n, _ := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || n != 4096 {
						err = fmt.Errorf("%s, %d bytes", resp.Status, n)
					}
				}
				if err != nil {
					mu.Lock()
					bad = append(bad, err.Error())
					mu.Unlock()
				}
				counts[c]++
			}
		}()
	}
	for i := range 5 {
		origin, level := a.URL("origin"), "info"
		if i%2 == 0 {
			origin, level = b.URL("origin"), "debug"
		}
		hup(t, s, reloadYAML(origin, fmt.Sprintf("tok%d", i), level, fmt.Sprintf("%dm", i+1)), "reload: config applied", i+1)
		time.Sleep(100 * time.Millisecond) // let the clients run on the new settings
	}
	close(stop)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d bad responses during the reloads, first: %s", len(bad), bad[0])
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	for i := range urls {
		if n := originCount(t, a, path(i)); n != 1 {
			t.Errorf("%s reached origin A %d times, want 1 (cache kept)", path(i), n)
		}
	}
	if n := getOriginStats(t, b).Requests; n != 0 {
		t.Errorf("origin B saw %d requests for cached URLs", n)
	}
	if ok := metric(t, s.Admin, `strata_config_reloads_total{result="ok"}`); ok != 5 {
		t.Errorf("reloads ok = %v, want 5", ok)
	}
	t.Logf("%d responses, all 200, during 5 reloads", total)
}

// TestReloadBrokenFile: a file that does not load changes nothing: the
// process serves on with the old origin and token, every problem is
// logged with its line, and the reload counts as failed.
func TestReloadBrokenFile(t *testing.T) {
	a, b := startOrigin(t), startOrigin(t)
	s := startStrata(t, strataOpts{Config: reloadYAML(a.URL("origin"), "one", "info", "10m")})
	broken := fmt.Sprintf("origins: [{name: o, url: %q}]\nadmin: {purge_token: two}\nlimits: {fill_timeout: -1s}\nbogus: 1\n",
		b.URL("origin"))
	hup(t, s, broken, "reload: config refused", 1)
	out := s.Output()
	for _, want := range []string{`strata.yaml:3: limits.fill_timeout`, `strata.yaml:4: bogus: unknown key`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q", want)
		}
	}
	if resp, _ := get(t, s.URL+"/obj/1k/after?max-age=60"); resp.StatusCode != 200 {
		t.Fatalf("after the refused reload: %s", resp.Status)
	}
	if na, nb := originCount(t, a, "/obj/1k/after?max-age=60"), getOriginStats(t, b).Requests; na != 1 || nb != 0 {
		t.Errorf("origin A saw %d, B %d: want the old origin A still in force", na, nb)
	}
	if c := purgeStatus(t, s, "two", s.URL+"/obj/1k/after?max-age=60"); c != http.StatusUnauthorized {
		t.Errorf("purge with the refused token: %d, want 401", c)
	}
	if c := purgeStatus(t, s, "one", "http://x/none"); c == http.StatusUnauthorized {
		t.Errorf("purge with the token in force: %d", c)
	}
	if n := metric(t, s.Admin, `strata_config_reloads_total{result="failed"}`); n != 1 {
		t.Errorf("reloads failed = %v, want 1", n)
	}
}

// TestReloadTakesEffect: a new origin, purge token and log level apply
// after SIGHUP; a key that needs a restart is named and kept.
func TestReloadTakesEffect(t *testing.T) {
	a, b := startOrigin(t), startOrigin(t)
	s := startStrata(t, strataOpts{Config: reloadYAML(a.URL("origin"), "one", "info", "10m")})
	if resp, _ := get(t, s.URL+"/obj/1k/before?max-age=600"); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	next := reloadYAML(b.URL("origin"), "two", "debug", "2m") + "cache: {memory: {policy: lru}}\n"
	hup(t, s, next, "reload: config applied", 1)
	if !regexp.MustCompile(`reload: key not applied.*key=cache.memory.policy`).MatchString(s.Output()) {
		t.Errorf("no WARN line naming cache.memory.policy as not applied")
	}
	if !strings.Contains(s.Output(), "reload: in force") {
		t.Errorf("log level debug not in force: no debug line after the reload")
	}
	resp, _ := get(t, s.URL+"/obj/1k/after?max-age=600")
	if resp.StatusCode != 200 || originCount(t, b, "/obj/1k/after?max-age=600") != 1 {
		t.Errorf("a new URL after the reload did not go to origin B: %s", resp.Status)
	}
	if resp, _ := get(t, s.URL+"/obj/1k/before?max-age=600"); !strings.Contains(cacheStatus(resp.Header), "hit") {
		t.Errorf("a URL cached before the reload: %q, want a hit", cacheStatus(resp.Header))
	}
	if c := purgeStatus(t, s, "one", "http://x/none"); c != http.StatusUnauthorized {
		t.Errorf("old token after the reload: %d, want 401", c)
	}
	if c := purgeStatus(t, s, "two", "http://x/none"); c == http.StatusUnauthorized || c == http.StatusForbidden {
		t.Errorf("new token after the reload: %d", c)
	}
	hup(t, s, reloadYAML(b.URL("origin"), "two", "info", "2m"), "reload: config applied", 2)
	if n := strings.Count(s.Output(), "reload: in force"); n != 1 {
		t.Errorf("debug lines after going back to info: %d in force lines, want 1", n)
	}
}

// TestReloadTLSCertificate: a certificate renewed under the same file
// names is served after SIGHUP (the new one verifies, the old one no
// longer does), and the HTTPS listener keeps its cache.
func TestReloadTLSCertificate(t *testing.T) {
	o := startOrigin(t)
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	b, err := os.ReadFile(cert) // a copy of the first certificate, to trust it alone later
	if err != nil {
		t.Fatal(err)
	}
	oldCert := filepath.Join(t.TempDir(), "old.pem")
	if err := os.WriteFile(oldCert, b, 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf("origins: [{url: %s}]\ntls: {listen: \"127.0.0.1:0\", cert_file: %s, key_file: %s}\n", o.URL("origin"), cert, key)
	s := startStrata(t, strataOpts{Dir: dir, Config: yaml})
	https := ""
	for _, l := range s.Listeners {
		if l.Name == "strata" && l.Scheme == "https" {
			https = "https://" + l.Addr
		}
	}
	if https == "" {
		t.Fatalf("no https listener logged: %v", s.Listeners)
	}
	if r := curl(t, "--cacert", oldCert, https+"/obj/1k/tls?max-age=600"); r.Exit != 0 || r.Status != 200 {
		t.Fatalf("before the renewal: curl exit %d (%s) status %d", r.Exit, r.Stderr, r.Status)
	}
	selfSigned(t, dir) // renewed: a new key and certificate under the same names
	hup(t, s, yaml, "reload: config applied", 1)
	r := curl(t, "--cacert", cert, https+"/obj/1k/tls?max-age=600")
	if r.Exit != 0 || r.Status != 200 {
		t.Fatalf("the renewed certificate: curl exit %d (%s) status %d", r.Exit, r.Stderr, r.Status)
	}
	wantStatus(t, "after the renewal", r.Header, "hit")
	if r := curl(t, "--cacert", oldCert, https+"/obj/1k/tls?max-age=600"); r.Exit == 0 {
		t.Errorf("the old certificate is still served after the reload")
	}
}

// TestReloadFlagsStillOverride: -origin overrides the file's origin at
// start and after a reload that changes it, while the rest of the new
// file applies.
func TestReloadFlagsStillOverride(t *testing.T) {
	a, b := startOrigin(t), startOrigin(t)
	s := startStrata(t, strataOpts{Origin: a.URL("origin"), Config: reloadYAML(b.URL("origin"), "one", "info", "10m")})
	hup(t, s, reloadYAML(b.URL("origin"), "two", "info", "10m"), "reload: config applied", 1)
	if resp, _ := get(t, s.URL+"/obj/1k/flag?max-age=60"); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if na, nb := originCount(t, a, "/obj/1k/flag?max-age=60"), getOriginStats(t, b).Requests; na != 1 || nb != 0 {
		t.Errorf("origin A (-origin) saw %d, B (the file's) %d: want the flag to win after the reload", na, nb)
	}
	if c := purgeStatus(t, s, "two", "http://x/none"); c == http.StatusUnauthorized {
		t.Errorf("the new token did not apply beside the flag: %d", c)
	}
}
