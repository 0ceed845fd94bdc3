package proxy

import (
	"errors"
	"strings"
	"testing"
)

func TestOptionsValidate(t *testing.T) {
	var o Options
	o.Origins = []OriginOptions{{URL: "http://127.0.0.1:1"}}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if !o.Origins[0].Default || o.SliceSize != 1<<20 || o.ViaName != "strata" || !o.Policy.Shared || o.Origins[0].MaxHeaderBytes != 64<<10 {
		t.Fatalf("defaults not applied: %+v", o)
	}
	bad := Options{
		SliceSize: 100, FillWindow: 1,
		Origins: []OriginOptions{
			{URL: "ftp://x", HostHeader: "weird", Default: true},
			{URL: "http://x/path", Default: true, CAFile: "/x.pem", MaxHeaderBytes: 2 << 20},
		},
	}
	bad.EnsureDefaults()
	err := bad.Validate()
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Validate = %v", err)
	}
	for _, want := range []string{"slice_size", "fill_window", "origins[0]: url", "host_header", "origins[1]: url", "ca_file", "origins[1]: max_header_bytes 2097152", "2 origins are default"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing problem %q in:\n%v", want, err)
		}
	}
	if _, err := New(newMapStore(), Options{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("New without origins: %v", err)
	}
}
