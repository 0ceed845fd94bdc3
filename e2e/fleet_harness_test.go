package e2e

// Helpers of the fleet tests: strata nodes on fixed loopback ports (so
// that each can name the others as peers before they start) and Debian's
// haproxy running configs/haproxy/haproxy.cfg with loopback addresses.

import (
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// node is one strata of a fleet: fixed client and admin addresses, its
// own directory, restartable.
type node struct {
	*strata
	listen, admin string // host:port
	dir, yaml     string
}

// startNode starts (or restarts) n.
func startNode(t testing.TB, n *node) {
	t.Helper()
	path := filepath.Join(n.dir, "strata.yaml")
	if err := os.WriteFile(path, []byte(n.yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcessOpts(t, procOpts{Wait: []string{"strata", "admin"}, Dir: n.dir}, strataBin(t),
		"-config", path, "-listen", n.listen, "-admin-listen", n.admin)
	n.strata = &strata{process: p, URL: p.URL("strata"), Admin: p.URL("admin"), Dir: n.dir}
}

// startFleet starts count memory-only nodes in front of origin, each
// with the others as cluster.peers and the purge token "fleet-token".
func startFleet(t testing.TB, count int, origin, extra string) []*node {
	t.Helper()
	nodes := make([]*node, count)
	for i := range nodes {
		nodes[i] = &node{listen: freePort(t), admin: freePort(t), dir: t.TempDir()}
	}
	for i, n := range nodes {
		var peers []string
		for j, o := range nodes {
			if j != i {
				peers = append(peers, `"http://`+o.admin+`"`)
			}
		}
		n.yaml = "origins:\n  - url: " + origin + "\n" +
			"cache:\n  memory:\n    capacity: 32MiB\n  disk:\n    path: \"\"\n" +
			"admin:\n  purge_token: fleet-token\n" +
			"cluster:\n  peers: [" + strings.Join(peers, ", ") + "]\n  peer_retry_for: 5s\n" +
			"limits:\n  shutdown_timeout: 10s\n" + extra
		startNode(t, n)
	}
	return nodes
}

// haproxyBin returns haproxy's path or skips: make test installs it
// (apt-get); elsewhere the fleet tests cannot run.
func haproxyBin(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy not installed: the fleet tests run strata behind it (make test installs it: apt-get install haproxy)")
	}
	return bin
}

// lb is a running haproxy.
type lb struct {
	cmd   *exec.Cmd
	URL   string // http://front
	stats string // http://.../stats;csv
	out   *outputLog
	done  chan struct{}
}

var (
	bindRE   = regexp.MustCompile(`(?m)^(\s*bind\s+)\S+`)
	serverRE = regexp.MustCompile(`(?m)^\s*server\s+.*\n`)
)

// startLB runs the shipped configs/haproxy/haproxy.cfg with its two bind
// addresses and its server lines replaced by loopback ones, and edit
// applied to the text (nil: as shipped), and waits until every node is
// up.
func startLB(t testing.TB, nodes []*node, edit func(string) string) *lb {
	t.Helper()
	bin := haproxyBin(t)
	cfg, err := os.ReadFile(filepath.Join(repoRoot(t), "configs", "haproxy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	front, stats := freePort(t), freePort(t)
	binds := 0
	text := bindRE.ReplaceAllStringFunc(string(cfg), func(m string) string {
		binds++
		addr := front
		if binds == 2 {
			addr = stats
		}
		return bindRE.ReplaceAllString(m, "${1}"+addr)
	})
	var servers strings.Builder
	for i, n := range nodes {
		_, port, _ := net.SplitHostPort(n.admin)
		fmt.Fprintf(&servers, "    server s%d %s check port %s\n", i+1, n.listen, port)
	}
	replaced := false
	text = serverRE.ReplaceAllStringFunc(text, func(string) string {
		if replaced {
			return ""
		}
		replaced = true
		return servers.String()
	})
	if binds != 2 || !replaced {
		t.Fatalf("haproxy.cfg: want two bind lines and server lines, found %d binds", binds)
	}
	if edit != nil {
		text = edit(text)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	l := &lb{URL: "http://" + front, stats: "http://" + stats + "/stats;csv", out: &outputLog{}, done: make(chan struct{})}
	l.cmd = exec.Command(bin, "-db", "-f", path)
	l.cmd.Stdout, l.cmd.Stderr = l.out, l.out
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = l.cmd.Wait(); close(l.done) }()
	t.Cleanup(func() {
		_ = l.cmd.Process.Signal(syscall.SIGKILL)
		<-l.done
		if t.Failed() {
			t.Logf("haproxy output:\n%s", l.out.String())
		}
	})
	l.awaitUp(t, len(nodes))
	return l
}

func (l *outputLog) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.add(line)
	}
	return len(p), nil
}

// serverStats returns haproxy's CSV rows of the backend's servers by name.
func (l *lb) serverStats(t testing.TB) map[string]map[string]string {
	t.Helper()
	resp, err := http.Get(l.stats)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(string(b), "# "))).ReadAll()
	if err != nil || len(rows) < 2 {
		return nil
	}
	out := map[string]map[string]string{}
	for _, r := range rows[1:] {
		if len(r) < 2 || r[0] != "strata" {
			continue
		}
		m := map[string]string{}
		for i, h := range rows[0] {
			if i < len(r) {
				m[h] = r[i]
			}
		}
		out[r[1]] = m
	}
	return out
}

// awaitUp waits (at most 15 s) until want servers are UP.
func (l *lb) awaitUp(t testing.TB, want int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		up := 0
		for name, s := range l.serverStats(t) {
			if name != "BACKEND" && s["status"] == "UP" {
				up++
			}
		}
		if up == want {
			return
		}
		select {
		case <-l.done:
			t.Fatalf("haproxy exited; output:\n%s", l.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy: %d of %d servers up after 15s; output:\n%s", up, want, l.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// repoRoot is the module root (e2e's parent).
func repoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(wd)
}

// loadResult counts a load run's answers.
type loadResult struct {
	ok, failed atomic.Int64
	firstErr   atomic.Value // string
}

func (r *loadResult) String() string {
	e, _ := r.firstErr.Load().(string)
	return fmt.Sprintf("%d ok, %d failed (first: %s)", r.ok.Load(), r.failed.Load(), e)
}

// load runs clients goroutines, each GETting base+urls[k] for k in its
// own order, until each did pass passes over urls or stop is closed (or
// the deadline passes). Every answer but a whole 200 is a failure.
func load(base string, urls []string, clients, passes int, stop <-chan struct{}, deadline time.Time) *loadResult {
	return loadHost(base, "", urls, clients, passes, stop, deadline)
}

// loadHost is load with the Host header host ("" leaves base's).
func loadHost(base, host string, urls []string, clients, passes int, stop <-chan struct{}, deadline time.Time) *loadResult {
	res := &loadResult{}
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range passes {
				for k := range urls {
					select {
					case <-stop:
						return
					default:
					}
					if time.Now().After(deadline) {
						return
					}
					u := urls[(k*7+c*13+p*31)%len(urls)]
					if err := getWhole(hc, base+u, host); err != nil {
						res.failed.Add(1)
						res.firstErr.CompareAndSwap(nil, err.Error())
					} else {
						res.ok.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	return res
}

// getWhole GETs url and fails unless it is a 200 with its whole body.
func getWhole(hc *http.Client, url, host string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Host = host
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return fmt.Errorf("%s: body after %d bytes: %w", url, n, err)
	}
	if resp.StatusCode != 200 || (resp.ContentLength >= 0 && n != resp.ContentLength) {
		return fmt.Errorf("%s: %s, %d bytes", url, resp.Status, n)
	}
	return nil
}

// sumMetric adds name over the nodes that run.
func sumMetric(t testing.TB, nodes []*node, name string) float64 {
	t.Helper()
	var s float64
	for _, n := range nodes {
		s += metric(t, n.Admin, name)
	}
	return s
}

// originTotal is how many requests the origin saw for the paths.
func originTotal(t testing.TB, o *process, paths []string) int {
	t.Helper()
	st := getOriginStats(t, o)
	n := 0
	for _, p := range paths {
		n += int(st.Paths[p])
	}
	return n
}
