package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"strata/admission"
	"strata/hybrid"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// TestCompose: the embedded default maps field by field onto each
// package's Options, and those validate.
func TestCompose(t *testing.T) {
	c, err := LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Compose(nil)
	if err != nil {
		t.Fatalf("default config does not compose: %v", err)
	}
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"devices", len(p.Devices), 1},
		{"device path", p.Devices[0].Path, "./data/strata.cache"},
		{"device size", p.Devices[0].Options.Size, int64(1 << 30)},
		{"memory", p.Cache.Memory.Capacity, int64(256 << 20)},
		{"policy", p.Cache.Memory.Policy, memory.S3FIFO},
		{"region", p.Cache.Disk.RegionSize, int64(16 << 20)},
		{"runtime", p.Cache.Disk.Runtime, disk.RuntimeUring},
		{"read timeout", p.Cache.Disk.ReadTimeout, 250 * time.Millisecond},
		{"error limit", p.Cache.Disk.ErrorLimit, 10},
		{"error window", p.Cache.Disk.ErrorWindow, 10 * time.Second},
		{"probe interval", p.Cache.Disk.ProbeInterval, 2 * time.Second},
		{"rate", p.Admission.RateLimit.BytesPerSecond, int64(64 << 20)},
		{"burst", p.Admission.RateLimit.BurstBytes, int64(32 << 20)},
		{"frequency off", p.Admission.Frequency.Disabled, true},
		{"origin", p.Proxy.Origins[0].URL, "http://127.0.0.1:8081"},
		{"origin read", p.Proxy.Origins[0].ResponseTimeout, 30 * time.Second},
		{"origin header bytes", p.Proxy.Origins[0].MaxHeaderBytes, 64 << 10},
		{"fill timeout", p.Proxy.FillTimeout, 10 * time.Minute},
		{"slice", p.Proxy.SliceSize, 1 << 20},
		{"max object", p.Proxy.MaxObjectSize, int64(256 << 20)},
		{"header bytes", p.Proxy.MaxHeaderBytes, 16 << 10},
		{"shared", p.Proxy.Policy.Shared, true},
		{"no token", p.Proxy.PurgeToken, ""},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestComposeFill: drive_writes_per_day reaches admission's Fill options;
// -1 turns the fill past rate off. DeviceBytes is the binary's to set.
func TestComposeFill(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		disabled   bool
		dwpd       float64
	}{
		{"default", "", false, admission.DefaultDriveWritesPerDay},
		{"fractional", "drive_writes_per_day: 0.3", false, 0.3},
		{"several", "drive_writes_per_day: 3", false, 3},
		{"off", "drive_writes_per_day: -1", true, admission.DefaultDriveWritesPerDay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := composeWith(t, "cache: {disk: {path: /tmp/x, size: 1GiB, admission: {"+tc.yaml+"}}}\n", Overrides{})
			if err != nil {
				t.Fatal(err)
			}
			f := p.Admission.Fill
			if f.Disabled != tc.disabled || f.DriveWritesPerDay != tc.dwpd || f.DeviceBytes != 0 {
				t.Fatalf("fill options %+v, want disabled %v, dwpd %g, no device bytes", f, tc.disabled, tc.dwpd)
			}
		})
	}
}

// TestComposeProblems: what a config allows but a package refuses is a
// Problem naming the field, located on its line.
func TestComposeProblems(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	os.WriteFile(token, []byte("  tok3n \nignored\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	for _, tc := range []struct {
		name, yaml, want string
		line             int
	}{
		{"no origins", "listen: \":80\"\n", "origins", 0},
		{"host with port", "origins:\n  - url: http://o:80\n    hosts: [\"a.test:80\"]\n    default: true\n", "origins[0].hosts[0]", 3},
		{"min frequency", "origins: [{url: http://o:80}]\ncache:\n  disk:\n    admission:\n      min_frequency: 20\n", "cache.disk.admission", 4},
		{"too few regions", "origins: [{url: http://o:80}]\ncache:\n  disk:\n    path: /x\n    size: 64MiB\n", "cache.disk.size", 5},
		{"slice over proxy max", "origins: [{url: http://o:80}]\ncache:\n  slice_size: 32MiB\n  disk: {region_size: 128MiB, size: 1GiB}\n", "origins", 0},
		{"empty token file", "origins: [{url: http://o:80}]\nadmin: {purge_token_file: " + empty + "}\n", "admin.purge_token_file", 2},
		{"token file ok", "origins: [{url: http://o:80}]\nadmin: {purge_token_file: " + token + "}\n", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load([]byte(tc.yaml), "t.yaml")
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			p, err := c.Compose(nil)
			if tc.want == "" {
				if err != nil || p.Proxy.PurgeToken != "tok3n" {
					t.Fatalf("err %v, token %q; want tok3n", err, p.Proxy.PurgeToken)
				}
				return
			}
			ps, ok := err.(Problems)
			if !ok {
				t.Fatalf("err %v, want Problems", err)
			}
			ps = ps.Locate([]byte(tc.yaml), "t.yaml")
			if ps[0].Field != tc.want || (tc.line != 0 && ps[0].Line != tc.line) {
				t.Errorf("problems %v, want field %s on line %d", ps, tc.want, tc.line)
			}
		})
	}
}

// TestComposeOriginFlag: a config without origins is completed by -origin
// (the flags apply after Load), and wildcard hosts are routed.
func TestComposeOriginFlag(t *testing.T) {
	c, err := Load([]byte("listen: \":80\"\ncache:\n  disk: {path: /tmp/x.cache}\n"), "t.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := c.Apply(Overrides{Origin: "http://127.0.0.1:8081"}); err != nil {
		t.Fatal(err)
	}
	p, err := c.Compose(nil)
	if err != nil {
		t.Fatalf("Compose: %v", err)
	}
	if len(p.Proxy.Origins) != 1 || p.Proxy.Origins[0].URL != "http://127.0.0.1:8081" {
		t.Fatalf("origins %+v", p.Proxy.Origins)
	}
	if p.Proxy.Purge.StateFile != "/tmp/x.cache.purge" {
		t.Fatalf("purge state file %q", p.Proxy.Purge.StateFile)
	}
	c, err = Load([]byte("origins:\n  - url: http://o:80\n    hosts: [\"*.a.test\"]\n    default: true\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compose(nil); err != nil {
		t.Fatalf("wildcard host refused: %v", err)
	}
}

// TestCheckFiles names every missing file.
func TestCheckFiles(t *testing.T) {
	c := &Config{
		TLS:     TLS{Listen: ":0", CertFile: "/nonexistent/cert", KeyFile: "/nonexistent/key"},
		Origins: []Origin{{URL: "https://o", CAFile: "/nonexistent/ca"}},
		Admin:   Admin{PurgeTokenFile: "/nonexistent/token"},
	}
	err := c.CheckFiles()
	for _, f := range []string{"tls.cert_file", "tls.key_file", "origins[0].ca_file", "admin.purge_token_file"} {
		if err == nil || !strings.Contains(err.Error(), f+": open /nonexistent/") {
			t.Errorf("CheckFiles: %v; want a problem for %s", err, f)
		}
	}
	if err := (&Config{}).CheckFiles(); err != nil {
		t.Errorf("no files: %v", err)
	}
}

// TestComposePromotion: cache.promotion reaches hybrid; promote: false
// means never; an unknown value is a problem on its line.
func TestComposePromotion(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want hybrid.Promotion
	}{
		{"origins: [{url: http://o:80}]\n", hybrid.PromoteSecondHit},
		{"origins: [{url: http://o:80}]\ncache: {promotion: first-hit}\n", hybrid.PromoteFirstHit},
		{"origins: [{url: http://o:80}]\ncache: {promotion: first-hit, promote: false}\n", hybrid.PromoteNever},
	} {
		c, err := Load([]byte(tc.yaml), "t.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		p, err := c.Compose(nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if p.Cache.Promotion != tc.want {
			t.Errorf("%q: promotion %q, want %q", tc.yaml, p.Cache.Promotion, tc.want)
		}
	}
	_, err := Load([]byte("origins: [{url: http://o:80}]\ncache:\n  promotion: sometimes\n"), "t.yaml")
	if err == nil || !strings.Contains(err.Error(), "t.yaml:3: cache.promotion") {
		t.Fatalf("bad promotion: %v", err)
	}
}

// TestComposeOriginLimits: origin limits set in the file reach
// proxy.Options.
func TestComposeOriginLimits(t *testing.T) {
	c, err := Load([]byte("origins:\n  - url: http://o:80\n    max_header_bytes: 16KiB\nlimits:\n  fill_timeout: 90s\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Compose(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Proxy.Origins[0].MaxHeaderBytes; got != 16<<10 {
		t.Errorf("max_header_bytes %d, want %d", got, 16<<10)
	}
	if got := p.Proxy.FillTimeout; got != 90*time.Second {
		t.Errorf("fill_timeout %v, want 90s", got)
	}
}
