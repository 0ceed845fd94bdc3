package e2e

// The e2e harness: build the real binaries once per `go test` run, start
// them on loopback with port 0, read their bound addresses from the
// "NAME listening on SCHEME://ADDR" lines they print, and stop them.
//
// Every binary strata ships prints one such line per listener once it is
// bound (cmd/origin: "origin listening on http://127.0.0.1:40123"; the
// strata binary is expected to print "strata listening on ..." and "admin
// listening on ..."). Processes started here are always killed by
// t.Cleanup; their output is logged when the test failed.

import (
	"bufio"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildTags are the tags the binaries are built with: "invariants" when
// the tests run with -tags invariants (harness_invariants_test.go).
var buildTags = ""

var build struct {
	once sync.Once
	dir  string
	err  error
}

// binPath returns the path of the named command (cmd/NAME), building all of
// ./cmd/... once per test binary run.
func binPath(t testing.TB, name string) string {
	t.Helper()
	build.once.Do(func() { build.dir, build.err = buildBinaries() })
	if build.err != nil {
		t.Fatalf("building the binaries: %v", build.err)
	}
	p := filepath.Join(build.dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("binary %s: %v", name, err)
	}
	return p
}

// buildBinaries runs `go build -o DIR/ ./cmd/...` from the module root, or
// returns $STRATA_BIN_DIR when set (binaries built elsewhere, e.g. by
// `make build`). DIR is fixed per module root and tags, under the temporary
// directory, so repeated runs reuse it (the Go build cache makes a rebuild
// cheap) instead of leaving a directory per run; TestMain-free on purpose.
// It is safe to call from a TestMain before m.Run.
func buildBinaries() (string, error) {
	if d := os.Getenv("STRATA_BIN_DIR"); d != "" {
		return d, nil
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: %q %v", gomod, err)
	}
	root := filepath.Dir(gomod)
	h := fnv.New64a()
	io.WriteString(h, root+"\x00"+buildTags)
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("strata-e2e-bin-%x", h.Sum64()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-tags", buildTags, "-o", dir+string(filepath.Separator), "./cmd/...")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/...: %v\n%s", err, out)
	}
	return dir, nil
}

// listener is one "NAME listening on SCHEME://ADDR" line.
type listener struct{ Name, Scheme, Addr string }

var listeningRE = regexp.MustCompile(`(\S+) listening on (https?)://(\S+)`)

// process is a started binary.
type process struct {
	t         testing.TB
	name      string
	cmd       *exec.Cmd
	PID       int
	Addr      string     // the first listener's host:port
	Listeners []listener // in the order printed
	out       *outputLog
	exited    chan struct{} // closed once the process was waited for and its output read
	waitErr   error
	stopOnce  sync.Once
}

// procOpts tune startProcessOpts.
type procOpts struct {
	Wait    []string      // listener names to wait for; default: any one listener
	Env     []string      // added to the environment
	Dir     string        // working directory; default a fresh t.TempDir()
	Timeout time.Duration // for the listeners to appear; default 15s
}

// startProcess starts bin with args and waits for its first listener.
func startProcess(t testing.TB, bin string, args ...string) *process {
	t.Helper()
	return startProcessOpts(t, procOpts{}, bin, args...)
}

// startProcessOpts starts bin with args and waits until it printed the
// listeners o.Wait names (or any one), failing the test if it exits first
// or the timeout passes.
func startProcessOpts(t testing.TB, o procOpts, bin string, args ...string) *process {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 15 * time.Second
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = o.Dir, pw, pw
	cmd.Env = append(os.Environ(), o.Env...)
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		t.Fatalf("start %s: %v", bin, err)
	}
	pw.Close() // the child holds its own copy; EOF comes when it exits
	p := &process{t: t, name: filepath.Base(bin), cmd: cmd, PID: cmd.Process.Pid,
		out: &outputLog{}, exited: make(chan struct{})}
	found := make(chan listener, 16)
	scanned := make(chan struct{})
	go p.scan(pr, found, scanned)
	go func() {
		p.waitErr = cmd.Wait()
		// Output() after Stop or Wait must hold the last lines: the scanner
		// may still be reading them when Wait returns.
		select {
		case <-scanned:
		case <-time.After(5 * time.Second): // a grandchild holds the pipe
		}
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		<-scanned
		if t.Failed() {
			t.Logf("%s (pid %d) output:\n%s", p.name, p.PID, p.out.String())
		}
	})
	p.awaitListeners(o, found)
	return p
}

// scan reads the process's output until EOF, keeping it and reporting
// listener lines.
func (p *process) scan(r io.ReadCloser, found chan<- listener, done chan<- struct{}) {
	defer close(done)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.out.add(line)
		if m := listeningRE.FindStringSubmatch(line); m != nil {
			select {
			case found <- listener{Name: m[1], Scheme: m[2], Addr: m[3]}:
			default: // more listeners than anyone waits for
			}
		}
	}
	io.Copy(io.Discard, r) // a line over 1 MiB: drain so the child never blocks
}

func (p *process) awaitListeners(o procOpts, found <-chan listener) {
	p.t.Helper()
	want := map[string]bool{}
	for _, n := range o.Wait {
		want[n] = true
	}
	deadline := time.NewTimer(o.Timeout)
	defer deadline.Stop()
	for {
		select {
		case l := <-found:
			p.Listeners = append(p.Listeners, l)
			if p.Addr == "" {
				p.Addr = l.Addr
			}
			delete(want, l.Name)
			if len(want) == 0 {
				return
			}
		case <-p.exited:
			p.t.Fatalf("%s exited before listening (%v); output:\n%s", p.name, p.waitErr, p.out.String())
		case <-deadline.C:
			p.t.Fatalf("%s: no listening line for %v after %v; output:\n%s", p.name, o.Wait, o.Timeout, p.out.String())
		}
	}
}

// URL returns SCHEME://ADDR of the first listener called name ("" if none).
func (p *process) URL(name string) string {
	for _, l := range p.Listeners {
		if l.Name == name {
			return l.Scheme + "://" + l.Addr
		}
	}
	return ""
}

// Stop sends SIGTERM, waits up to 10 s, then SIGKILLs. It returns the
// process's exit error (nil for exit status 0), or an error saying it had
// to be killed.
func (p *process) Stop() error {
	p.t.Helper()
	var killed bool
	p.stopOnce.Do(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			killed = true
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	<-p.exited
	if killed {
		return fmt.Errorf("%s did not exit within 10s of SIGTERM; killed", p.name)
	}
	return p.waitErr
}

// Wait waits up to timeout for the process to exit by itself.
func (p *process) Wait(timeout time.Duration) error {
	select {
	case <-p.exited:
		return p.waitErr
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %v", p.name, timeout)
	}
}

// kill ends the process now (if it still runs) and waits for it.
func (p *process) kill() {
	p.stopOnce.Do(func() { p.cmd.Process.Kill() })
	<-p.exited
}

// Output returns what the process printed so far (stdout and stderr).
func (p *process) Output() string { return p.out.String() }

// RSS returns the process's resident set size and its peak (VmRSS, VmHWM)
// in bytes, from /proc (Linux).
func (p *process) RSS() (cur, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "kB" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "VmRSS:":
				cur = n << 10
			case "VmHWM:":
				peak = n << 10
			}
		}
	}
	if cur == 0 {
		return 0, 0, errors.New("no VmRSS in /proc status")
	}
	return cur, peak, nil
}

// outputLog keeps a process's output: the first and the last 256 KiB.
type outputLog struct {
	mu         sync.Mutex
	head, tail []string
	headBytes  int
	tailBytes  int
	dropped    int
}

const outputKeep = 256 << 10

func (l *outputLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.headBytes < outputKeep {
		l.head = append(l.head, line)
		l.headBytes += len(line) + 1
		return
	}
	l.tail = append(l.tail, line)
	l.tailBytes += len(line) + 1
	for l.tailBytes > outputKeep && len(l.tail) > 1 {
		l.tailBytes -= len(l.tail[0]) + 1
		l.tail = l.tail[1:]
		l.dropped++
	}
}

func (l *outputLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.Join(l.head, "\n")
	if l.dropped > 0 {
		s += fmt.Sprintf("\n[... %d lines dropped ...]", l.dropped)
	}
	if len(l.tail) > 0 {
		s += "\n" + strings.Join(l.tail, "\n")
	}
	return s
}
