package main

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"text/template"
)

// system is one cache under test: how to find it, configure it from the
// templates in bench/, and the command that runs it in the foreground.
type system struct {
	Name string
	// Bins are the commands it needs; Package installs them.
	Bins    []string
	Package string
	// prepare writes the config under e.Dir and returns the command line
	// and extra environment.
	prepare func(e *sysEnv) (argv, env []string, err error)
	// Reference marks a yardstick, not a competitor: its rows are printed
	// but it is never "the best peer".
	Reference bool
	// runs says which scenarios it takes part in; nil means all.
	runs func(sc scenario) bool
}

// takesPart reports whether s runs in sc.
func (s *system) takesPart(sc scenario) bool { return s.runs == nil || s.runs(sc) }

// sysEnv is what a system's templates see.
type sysEnv struct {
	Name           string
	Dir            string // this system's temp dir
	BenchDir       string // the repo's bench/
	StrataBin      string
	BareBin        string
	Host           string // 127.0.0.1
	Port           int
	Listen         string // Host:Port
	AdminListen    string
	OriginURL      string
	OriginHost     string
	OriginPort     string
	OriginHostPort string
	MemBytes       int64
	DiskBytes      int64
	MaxObjectBytes int64
	KeysZoneMiB    int64
	Cores          int
	Root           bool   // running as root
	User           string // Traffic Server's user_id
	CacheFile      string
	// AccessLogFormat turns strata's access log on ("combined", "json")
	// into AccessLogPath; empty: off.
	AccessLogFormat string
	AccessLogPath   string
}

var allSystems = []*system{
	{Name: "strata", prepare: prepareStrata},
	// strata again with its access log on, in each format, written to a
	// file in its temp dir: the log's cost on 1 KiB hits (the target is
	// at most 5% of req/s) against the strata row just before it.
	{Name: "strata-combined", Reference: true, prepare: prepareStrataLog("combined"), runs: smallHits},
	{Name: "strata-json", Reference: true, prepare: prepareStrataLog("json"), runs: smallHits},
	{Name: "nginx", Bins: []string{"nginx"}, Package: "nginx", prepare: prepareNginx},
	{Name: "varnish-malloc", Bins: []string{"varnishd"}, Package: "varnish", prepare: prepareVarnish("malloc")},
	{Name: "varnish-file", Bins: []string{"varnishd"}, Package: "varnish", prepare: prepareVarnish("file")},
	{Name: "ats", Bins: []string{"traffic_server"}, Package: "trafficserver", prepare: prepareATS},
	// The Go ceiling (bench/barehandler): whole bodies from memory in the
	// hit scenarios, a plain fasthttp proxy in the miss scenario.
	{Name: "bare", Reference: true, prepare: prepareBare("serve"),
		runs: func(sc scenario) bool { return sc.Mode != "unique" && sc.Mode != "range" }},
	{Name: "bare-proxy", Reference: true, prepare: prepareBare("proxy"),
		runs: func(sc scenario) bool { return sc.Mode == "unique" }},
}

func systemByName(name string) *system {
	for _, s := range allSystems {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func systemNames() []string {
	var out []string
	for _, s := range allSystems {
		out = append(out, s.Name)
	}
	return out
}

// freePort asks the kernel for a free port on 127.0.0.1. Another process
// could take it before the system binds it; the readiness check then fails
// loudly rather than measuring the wrong server.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("peerbench: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func newSysEnv(name, dir, benchDir, originURL string, o *Options) (*sysEnv, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	admin, err := freePort()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(originURL)
	if err != nil {
		return nil, fmt.Errorf("peerbench: origin URL: %w", err)
	}
	return &sysEnv{
		Name: name, Dir: dir, BenchDir: benchDir, StrataBin: o.Strata,
		BareBin: filepath.Join(o.Root, "bin", "barehandler"),
		Host:    "127.0.0.1", Port: port, Listen: "127.0.0.1:" + strconv.Itoa(port),
		AdminListen: "127.0.0.1:" + strconv.Itoa(admin),
		OriginURL:   originURL, OriginHost: u.Hostname(), OriginPort: u.Port(), OriginHostPort: u.Host,
		MemBytes: o.Mem, DiskBytes: o.Disk, Cores: o.Cores,
		// nginx: about 8,000 keys per MiB of zone; room for the disk budget
		// filled with 1 KiB objects would be absurd, 64 KiB is plenty.
		KeysZoneMiB: max(16, o.Disk/(64<<10)/8000+1),
		Root:        os.Geteuid() == 0,
	}, nil
}

// render executes bench/<tmpl> with e into dst; a missing key is an error.
func render(e *sysEnv, tmpl, dst string) error {
	t, err := template.New(filepath.Base(tmpl)).Option("missingkey=error").
		ParseFiles(filepath.Join(e.BenchDir, tmpl))
	if err != nil {
		return fmt.Errorf("peerbench: template: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, e); err != nil {
		return fmt.Errorf("peerbench: template %s: %w", tmpl, err)
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// prepareStrata renders bench/strata.yaml.tmpl: the peers' budgets, the
// disk tier on a file in the run's temp dir. -pprof serves Go's profiles
// on the admin listener, which -profile reads; it costs nothing unless a
// profile is taken.
func prepareStrata(e *sysEnv) ([]string, []string, error) {
	if _, err := os.Stat(e.StrataBin); err != nil {
		return nil, nil, fmt.Errorf("%w: strata not built (%s)", ErrUnavailable, e.StrataBin)
	}
	e.CacheFile = filepath.Join(e.Dir, "strata.cache")
	e.MaxObjectBytes = e.DiskBytes / 2
	conf := filepath.Join(e.Dir, "strata.yaml")
	if err := render(e, "strata.yaml.tmpl", conf); err != nil {
		return nil, nil, err
	}
	return []string{e.StrataBin, "-config", conf, "-pprof"}, nil, nil
}

// prepareStrataLog is prepareStrata with the access log on in format,
// and a disk tier of logRowDisk: every system starts before the first
// scenario and runs to the end, and strata preallocates its disk file,
// so a full budget each would hold two more -disk files in the temp dir
// all run long, started ahead of the peers that need room after them.
// These rows serve 1 KiB hits from the memory tier, which keeps the
// budget: the disk's size does not enter what they measure.
func prepareStrataLog(format string) func(e *sysEnv) ([]string, []string, error) {
	return func(e *sysEnv) ([]string, []string, error) {
		e.AccessLogFormat, e.AccessLogPath = format, filepath.Join(e.Dir, "access.log")
		e.DiskBytes = min(e.DiskBytes, logRowDisk)
		return prepareStrata(e)
	}
}

// smallHits is the scenarios of 1 KiB hits, where a log line costs the
// most against the rest of a request.
func smallHits(sc scenario) bool { return sc.ID == "1a" || sc.ID == "1b" }

// logRowDisk is the disk tier of the access log rows (prepareStrataLog).
const logRowDisk = 256 << 20

// prepareBare runs bin/barehandler (make build-bench) in mode: "serve"
// answers from memory, "proxy" passes every request to the origin.
func prepareBare(mode string) func(e *sysEnv) ([]string, []string, error) {
	return func(e *sysEnv) ([]string, []string, error) {
		if _, err := os.Stat(e.BareBin); err != nil {
			return nil, nil, fmt.Errorf("%w: barehandler not built (%s)", ErrUnavailable, e.BareBin)
		}
		return []string{e.BareBin, "-listen", e.Listen, "-mode", mode, "-origin", e.OriginURL}, nil, nil
	}
}

func prepareNginx(e *sysEnv) ([]string, []string, error) {
	for _, d := range []string{"cache", "logs"} {
		if err := os.MkdirAll(filepath.Join(e.Dir, d), 0o755); err != nil {
			return nil, nil, err
		}
	}
	conf := filepath.Join(e.Dir, "nginx.conf")
	if err := render(e, "nginx.conf.tmpl", conf); err != nil {
		return nil, nil, err
	}
	return []string{"nginx", "-p", e.Dir, "-c", conf, "-e", filepath.Join(e.Dir, "error.log")}, nil, nil
}

// prepareVarnish: malloc storage of the memory budget, or file storage of
// the disk budget (whose memory is then the page cache, as for nginx).
// An object larger than half the storage is not cached (see the VCL).
func prepareVarnish(kind string) func(e *sysEnv) ([]string, []string, error) {
	return func(e *sysEnv) ([]string, []string, error) {
		storage := "malloc," + strconv.FormatInt(e.MemBytes, 10)
		e.MaxObjectBytes = e.MemBytes / 2
		if kind == "file" {
			storage = "file," + filepath.Join(e.Dir, "varnish.bin") + "," + strconv.FormatInt(e.DiskBytes, 10)
			e.MaxObjectBytes = e.DiskBytes / 2
		}
		vcl := filepath.Join(e.Dir, "default.vcl")
		if err := render(e, "varnish.vcl.tmpl", vcl); err != nil {
			return nil, nil, err
		}
		pools := strconv.Itoa(e.Cores)
		return []string{"varnishd", "-F", "-j", "none", "-n", filepath.Join(e.Dir, "work"),
			"-a", e.Listen, "-T", "none", "-f", vcl, "-s", storage,
			"-p", "thread_pools=" + pools, "-p", "thread_pool_min=32", "-p", "thread_pool_max=1000",
			"-p", "timeout_idle=60",
			// The shared-memory log is 80 MiB by default, all of it
			// resident; nothing reads it here (logs are off for every peer).
			"-p", "vsl_space=16M",
		}, nil, nil
	}
}

// preallocate creates path with size bytes of real blocks (fallocate), or
// sparse when the file system cannot.
func preallocate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("peerbench: cache file: %w", err)
	}
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		if err := f.Truncate(size); err != nil {
			return fmt.Errorf("peerbench: cache file: %w", err)
		}
	}
	return nil
}

// prepareATS lays a runroot under e.Dir: the package's config files, ours
// rendered over them (records, storage, remap), state, logs and the cache
// file, which storage.config hands to Traffic Server as its raw disk.
func prepareATS(e *sysEnv) ([]string, []string, error) {
	etc := filepath.Join(e.Dir, "etc")
	for _, d := range []string{"etc", "var", "run", "log", "cache"} {
		if err := os.MkdirAll(filepath.Join(e.Dir, d), 0o755); err != nil {
			return nil, nil, err
		}
	}
	if out, err := exec.Command("cp", "-r", "/etc/trafficserver/.", etc).CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("peerbench: ats: copy package config: %v: %s", err, out)
	}
	e.CacheFile = filepath.Join(e.Dir, "cache", "ats.cache")
	if err := preallocate(e.CacheFile, e.DiskBytes); err != nil {
		return nil, nil, err
	}
	e.User = "#-1" // keep the user we run as
	for tmpl, dst := range map[string]string{
		"ats/records.config.tmpl": "etc/records.config",
		"ats/storage.config.tmpl": "etc/storage.config",
		"ats/remap.config.tmpl":   "etc/remap.config",
		"ats/runroot.yaml.tmpl":   "runroot.yaml",
	} {
		if err := render(e, tmpl, filepath.Join(e.Dir, dst)); err != nil {
			return nil, nil, err
		}
	}
	// volume.config from the package may name volumes we do not create.
	if err := os.WriteFile(filepath.Join(etc, "volume.config"), nil, 0o644); err != nil {
		return nil, nil, err
	}
	return []string{"traffic_server", "--run-root=" + filepath.Join(e.Dir, "runroot.yaml")},
		[]string{"TS_RUNROOT=" + e.Dir}, nil
}
