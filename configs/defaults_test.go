package configs

import (
	"reflect"
	"testing"

	"strata/admission"
	"strata/hybrid"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
	"strata/proxy"
)

// TestPackagesApplyDefaults: configs/default.yaml, composed, gives each
// package the values the package itself gives a zero field, so that a
// default lives in one place (the package) and the file only spells it
// out. Fields the config derives from others (the memory budget lowers
// the fill bounds, sizes the stream budget, the disk write queue and the
// disk read buffers from the slice size) or
// that have no default
// (the origin's address, hooks) are skipped by name.
func TestPackagesApplyDefaults(t *testing.T) {
	c, err := LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	parts, err := c.Compose(nil)
	if err != nil {
		t.Fatal(err)
	}
	zero := proxy.Options{Origins: []proxy.OriginOptions{{URL: parts.Proxy.Origins[0].URL}}}
	zero.EnsureDefaults()
	budgeted := map[string]bool{"MaxFills": true, "MaxLargeFills": true, "MaxStreamBytes": true}
	sameScalars(t, "proxy.Options", parts.Proxy, zero, budgeted)
	sameScalars(t, "proxy.OriginOptions", parts.Proxy.Origins[0], zero.Origins[0], nil)
	sameScalars(t, "proxy.Options.Policy", parts.Proxy.Policy, zero.Policy, nil)
	sameScalars(t, "proxy.Options.Loop", parts.Proxy.Loop, zero.Loop, nil)
	sameScalars(t, "proxy.Options.Peers", parts.Proxy.Peers, zero.Peers, nil)
	sameScalars(t, "proxy.Options.Compress", parts.Proxy.Compress, zero.Compress, nil)

	var cache hybrid.Options
	cache.EnsureDefaults()
	sameScalars(t, "hybrid.Options", parts.Cache, cache, nil)
	sameScalars(t, "memory.Options", parts.Cache.Memory, *new(memory.Options).EnsureDefaults(), nil)
	sameScalars(t, "disk.Options", parts.Cache.Disk, *new(disk.Options).EnsureDefaults(), map[string]bool{"QueueBytes": true, "ReadBufferBytes": true})

	var adm admission.Options
	adm.EnsureDefaults()
	// The binary sets DeviceBytes from the devices it opens.
	sameScalars(t, "admission.FillOptions", parts.Admission.Fill, adm.Fill, map[string]bool{"DeviceBytes": true})
	sameScalars(t, "admission.RateOptions", parts.Admission.RateLimit, adm.RateLimit, map[string]bool{"BurstBytes": true})
}

// sameScalars compares the scalar fields (numbers, strings, bools,
// durations) of two structs of one type, except those in skip.
func sameScalars(t *testing.T, what string, got, want any, skip map[string]bool) {
	t.Helper()
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	n := 0
	for i := range g.NumField() {
		f := g.Type().Field(i)
		if !f.IsExported() || skip[f.Name] {
			continue
		}
		switch f.Type.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64, reflect.String:
		default:
			continue
		}
		n++
		if a, b := g.Field(i).Interface(), w.Field(i).Interface(); a != b {
			t.Errorf("%s.%s: default.yaml gives %v, the package's default is %v", what, f.Name, a, b)
		}
	}
	if n == 0 {
		t.Fatalf("%s: no scalar field compared", what)
	}
}
