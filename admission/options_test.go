package admission

import (
	"errors"
	"strings"
	"testing"
)

func TestEnsureDefaults(t *testing.T) {
	var o Options
	o.EnsureDefaults()
	r, f := o.RateLimit, o.Frequency
	if r.BytesPerSecond != DefaultBytesPerSecond || r.BurstBytes != DefaultBytesPerSecond || r.Clock == nil {
		t.Errorf("rate defaults: %+v", r)
	}
	if f.MinFrequency != 2 || f.Keys != DefaultKeys || f.Window != 10*DefaultKeys || f.Shards < 1 {
		t.Errorf("frequency defaults: %+v", f)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	// Set fields survive.
	o = Options{RateLimit: RateOptions{BytesPerSecond: 5, BurstBytes: 7}, Frequency: FrequencyOptions{Keys: 100, Window: 300, Shards: 2, MinFrequency: 3}}
	o.EnsureDefaults()
	if o.RateLimit.BytesPerSecond != 5 || o.RateLimit.BurstBytes != 7 || o.Frequency.Keys != 100 ||
		o.Frequency.Window != 300 || o.Frequency.Shards != 2 || o.Frequency.MinFrequency != 3 {
		t.Errorf("EnsureDefaults overwrote set fields: %+v", o)
	}
	// The burst defaults to one second of the configured rate.
	o = Options{RateLimit: RateOptions{BytesPerSecond: 12345}}
	o.EnsureDefaults()
	if o.RateLimit.BurstBytes != 12345 {
		t.Errorf("burst default = %d, want one second of rate", o.RateLimit.BurstBytes)
	}
}

func TestDefaultShards(t *testing.T) {
	tests := []struct{ keys, procs, want int }{
		{1 << 18, 1, 4},
		{1 << 18, 2, 8},
		{1 << 18, 3, 16},
		{1 << 18, 64, 256},
		{1 << 18, 1000, 512}, // 512 words per shard at least
		{1 << 30, 1000, maxShards},
		{64, 8, 1},
	}
	for _, tt := range tests {
		if got := defaultShards(tt.keys, tt.procs); got != tt.want {
			t.Errorf("defaultShards(%d, %d) = %d, want %d", tt.keys, tt.procs, got, tt.want)
		}
	}
}

// TestValidate: every problem is reported at once, each wrapping
// ErrInvalidOptions and naming its field.
func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want []string // substrings, one per problem
	}{
		{"valid", Options{}, nil},
		{"negative rate and burst", Options{RateLimit: RateOptions{BytesPerSecond: -1, BurstBytes: -2}},
			[]string{"rate_limit.bytes_per_second -1", "rate_limit.burst_bytes -2"}},
		{"burst over an hour", Options{RateLimit: RateOptions{BytesPerSecond: 1, BurstBytes: 3601}},
			[]string{"rate_limit.burst_bytes 3601 exceeds"}},
		{"every frequency field", Options{Frequency: FrequencyOptions{MinFrequency: 17, Keys: 10, Window: 5, Shards: 3}},
			[]string{"frequency.min_frequency 17", "frequency.keys 10", "frequency.window 5", "frequency.shards 3"}},
		{"too many shards for the keys", Options{Frequency: FrequencyOptions{Keys: 64, Shards: 32}},
			[]string{"frequency.shards 32 leave"}},
		{"huge", Options{Frequency: FrequencyOptions{Keys: 1 << 31, Window: 1 << 40}},
			[]string{"frequency.keys 2147483648", "frequency.window 1099511627776"}},
		{"both members at once", Options{RateLimit: RateOptions{BytesPerSecond: -1}, Frequency: FrequencyOptions{MinFrequency: -1}},
			[]string{"rate_limit.bytes_per_second -1", "frequency.min_frequency -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.EnsureDefaults()
			err := o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Validate = %v, want ErrInvalidOptions", err)
			}
			msg := err.Error()
			if n := strings.Count(msg, "admission: invalid options: "); n != len(tt.want) {
				t.Errorf("%d problems reported, want %d:\n%s", n, len(tt.want), msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			if _, err := New(tt.o); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("New accepted invalid options: %v", err)
			}
		})
	}
}

func TestConstructorsValidate(t *testing.T) {
	if _, err := NewRateLimiter(RateOptions{BytesPerSecond: -5}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("NewRateLimiter(-5 B/s) = %v", err)
	}
	if _, err := NewFrequencyFilter(FrequencyOptions{Shards: 6}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("NewFrequencyFilter(6 shards) = %v", err)
	}
}
