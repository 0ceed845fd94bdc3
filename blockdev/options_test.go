package blockdev

import (
	"strings"
	"testing"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want []string // substrings of the error, all of them; none: valid
	}{
		{"zero is valid", Options{}, nil},
		{"size ok", Options{Size: 1 << 20}, nil},
		{"negative", Options{Size: -4096}, []string{"negative"}},
		{"unaligned", Options{Size: 4097}, []string{"not a multiple of 4096"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.EnsureDefaults()
			if !*o.Direct || o.Logger == nil {
				t.Fatalf("defaults not set: %+v", o)
			}
			checkErr(t, o.Validate(), tc.want)
		})
	}
	t.Run("reports every problem", func(t *testing.T) {
		o := Options{Size: -1}
		checkErr(t, o.Validate(), []string{"negative", "Direct is unset", "Logger is unset"})
	})
	t.Run("keeps Direct false", func(t *testing.T) {
		o := Options{Direct: new(false)}
		o.EnsureDefaults()
		if *o.Direct {
			t.Fatal("EnsureDefaults overrode Direct=false")
		}
	})
}

func checkErr(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}
