package configs

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// Tests of cache.disk.devices, the list form of the disk tier.

const twoDevices = `cache:
  memory: {capacity: 64MiB}
  disk:
    devices:
      - {path: /tmp/strata-a.cache, size: 512MiB}
      - {path: /tmp/strata-b.cache, size: 1GiB}
`

// TestDevicesCompose: the list form gives one DevicePart per device with
// its own size, in order; the memory budget counts each device's buffers
// and splits the write queue between them; -cache-path replaces the list.
func TestDevicesCompose(t *testing.T) {
	p, err := composeWith(t, twoDevices, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Devices) != 2 || p.Devices[0].Path != "/tmp/strata-a.cache" || p.Devices[0].Options.Size != 512*MiB ||
		p.Devices[1].Path != "/tmp/strata-b.cache" || p.Devices[1].Options.Size != GiB {
		t.Fatalf("devices %+v", p.Devices)
	}
	if p.Proxy.Purge.StateFile != "/tmp/strata-a.cache.purge" {
		t.Errorf("purge state file %q", p.Proxy.Purge.StateFile)
	}
	// Per device: (2·2 + 1) · 4 MiB buffers, the write queue's 2·2 · 4 MiB
	// floor, 8 readers · 2 MiB; the index: 1.5 GiB / 1024.
	if want := 2*(20*MiB+16*MiB+16*MiB) + 1536*KiB; p.Memory.Disk != want {
		t.Errorf("disk budget %s, want %s", mib(p.Memory.Disk), mib(want))
	}
	if want := 16*MiB + p.Memory.work()/8/2; p.Cache.Disk.QueueBytes != want {
		t.Errorf("queue per device %s, want %s", mib(p.Cache.Disk.QueueBytes), mib(want))
	}

	p, err = composeWith(t, twoDevices, Overrides{CachePath: "/tmp/one.cache", CacheSize: "256MiB"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Devices) != 1 || p.Devices[0].Path != "/tmp/one.cache" || p.Devices[0].Options.Size != 256*MiB {
		t.Fatalf("-cache-path over a list: devices %+v", p.Devices)
	}
	c, err := Load([]byte(good+twoDevices), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(Overrides{CacheSize: "2GiB"}); err == nil || !strings.Contains(err.Error(), "-cache-size") {
		t.Fatalf("-cache-size alone over a list: %v", err)
	}
}

// TestBadDevices: each mistake in the list form is a problem with its line.
func TestBadDevices(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // "line: substring"
	}{
		{"both forms", good + "cache:\n  disk:\n    path: /a\n    devices:\n      - {path: /b, size: 1GiB}\n",
			[]string{`7: cache.disk.devices: set path and size, or devices, not both`}},
		{"duplicate path", good + "cache:\n  disk:\n    devices:\n      - {path: /a, size: 1GiB}\n      - {path: /b}\n      - {path: /x/../a, size: 1GiB}\n",
			[]string{`9: cache.disk.devices[2].path: /x/../a is devices[0] already`}},
		{"no path", good + "cache:\n  disk:\n    devices:\n      - {size: 1GiB}\n",
			[]string{`7: cache.disk.devices[0].path: a device needs a path`}},
		{"too small", good + "cache:\n  disk:\n    devices:\n      - {path: /a}\n      - path: /b\n        size: 32MiB\n",
			[]string{`9: cache.disk.devices[1].size: must be 0 (the whole device) or at least 4 regions`}},
	} {
		t.Run(tc.name, func(t *testing.T) { wantLoadProblems(t, tc.yaml, tc.want) })
	}
}

// TestDevicesCheckFiles: a device of size 0 that does not exist is a
// problem (a file is created only at a given size); one that exists, or
// has a size, is not.
func TestDevicesCheckFiles(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.cache")
	c := &Config{Cache: Cache{Disk: Disk{Devices: []Device{
		{Path: dir}, {Path: missing}, {Path: filepath.Join(dir, "new.cache"), Size: Size(GiB)},
	}}}}
	err := c.CheckFiles()
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Field != "cache.disk.devices[1].size" ||
		!strings.Contains(ps[0].Msg, "a file to create needs a size") {
		t.Fatalf("CheckFiles: %v", err)
	}
}
