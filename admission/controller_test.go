package admission

import (
	"testing"
	"time"
)

// fakeController answers a fixed Decision and counts what it is told.
type fakeController struct {
	answer  Decision
	asked   int
	records int
	charged int
}

func (c *fakeController) Admit(uint64, int) Decision { c.asked++; return c.answer }
func (c *fakeController) Record(uint64)              { c.records++ }
func (c *fakeController) Charge(n int)               { c.charged += n }

func TestChain(t *testing.T) {
	tests := []struct {
		name    string
		answers []Decision
		want    Decision
		asked   []int // how many times each member was asked
	}{
		{"empty admits", nil, Admitted, nil},
		{"one member", []Decision{Throttled}, Throttled, []int{1}},
		{"all admit", []Decision{Admitted, Admitted, Admitted}, Admitted, []int{1, 1, 1}},
		{"first no wins and stops", []Decision{Admitted, Rejected, Throttled}, Rejected, []int{1, 1, 0}},
		{"throttled last", []Decision{Admitted, Admitted, Throttled}, Throttled, []int{1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var members []Controller
			var fakes []*fakeController
			for _, a := range tt.answers {
				f := &fakeController{answer: a}
				fakes = append(fakes, f)
				members = append(members, f)
			}
			c := Chain(members...)
			if got := c.Admit(1, 2); got != tt.want {
				t.Fatalf("Admit = %v, want %v", got, tt.want)
			}
			c.Record(3)
			c.Charge(4096)
			for i, f := range fakes {
				if f.asked != tt.asked[i] || f.records != 1 || f.charged != 4096 {
					t.Errorf("member %d: asked %d (want %d), records %d (want 1), charged %d (want 4096)",
						i, f.asked, tt.asked[i], f.records, f.charged)
				}
			}
		})
	}
}

func TestChainFlattens(t *testing.T) {
	a, b, c := &fakeController{answer: Admitted}, &fakeController{answer: Admitted}, &fakeController{answer: Admitted}
	ch := Chain(nil, Chain(a, b), nil, Chain(c))
	flat, ok := ch.(chain)
	if !ok || len(flat) != 3 {
		t.Fatalf("Chain(nil, Chain(a, b), nil, Chain(c)) = %#v, want a flat chain of 3", ch)
	}
	if one := Chain(nil, a); one != Controller(a) {
		t.Fatalf("a chain of one member is %#v, want the member", one)
	}
}

func TestDecisionString(t *testing.T) {
	for d, want := range map[Decision]string{Admitted: "admitted", Rejected: "rejected", Throttled: "throttled", 9: "invalid"} {
		if got := d.String(); got != want {
			t.Errorf("Decision(%d).String() = %q, want %q", d, got, want)
		}
		if d.OK() != (d == Admitted) {
			t.Errorf("Decision(%d).OK() = %v", d, d.OK())
		}
	}
}

// TestNewDefaultChain: the default controller rejects a key seen once,
// admits a key seen twice, and throttles it once the byte budget is spent.
func TestNewDefaultChain(t *testing.T) {
	clk := &ManualClock{}
	c, err := New(Options{RateLimit: RateOptions{BytesPerSecond: 1000, Clock: clk}})
	if err != nil {
		t.Fatal(err)
	}
	c.Record(1)
	if d := c.Admit(1, 100); d != Rejected {
		t.Fatalf("key seen once: %v, want rejected", d)
	}
	c.Record(1)
	if d := c.Admit(1, 100); d != Admitted {
		t.Fatalf("key seen twice: %v, want admitted", d)
	}
	c.Charge(1000)
	if d := c.Admit(1, 100); d != Throttled {
		t.Fatalf("budget spent: %v, want throttled", d)
	}
	if d := c.Admit(2, 100); d != Rejected {
		t.Fatalf("unseen key, budget spent: %v, want rejected (the filter answers first)", d)
	}
	clk.Advance(10 * time.Millisecond)
	if d := c.Admit(1, 100); d != Admitted {
		t.Fatalf("after a refill: %v, want admitted", d)
	}
}

func TestNewDisabled(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string // the concrete type New returns
	}{
		{"both disabled admit all", Options{Frequency: FrequencyOptions{Disabled: true}, RateLimit: RateOptions{Disabled: true}}, "chain"},
		{"only the limiter", Options{Frequency: FrequencyOptions{Disabled: true}}, "*RateLimiter"},
		{"only the filter", Options{RateLimit: RateOptions{Disabled: true}}, "*FrequencyFilter"},
		{"only the filler", Options{Frequency: FrequencyOptions{Disabled: true}, Fill: FillOptions{DeviceBytes: 1 << 30}}, "*Filler"},
		{"fill disabled", Options{Frequency: FrequencyOptions{Disabled: true}, Fill: FillOptions{Disabled: true, DeviceBytes: 1 << 30}}, "*RateLimiter"},
		{"fill without the rate", Options{Frequency: FrequencyOptions{Disabled: true}, RateLimit: RateOptions{Disabled: true}, Fill: FillOptions{DeviceBytes: 1 << 30}}, "chain"},
		{"disabled members are not validated", Options{Frequency: FrequencyOptions{Disabled: true, Keys: -1}, RateLimit: RateOptions{Disabled: true, BytesPerSecond: -1}}, "chain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			switch c.(type) {
			case chain:
				got = "chain"
				if d := c.Admit(1, 1); d != Admitted {
					t.Fatalf("empty chain: Admit = %v", d)
				}
			case *RateLimiter:
				got = "*RateLimiter"
			case *FrequencyFilter:
				got = "*FrequencyFilter"
			case *Filler:
				got = "*Filler"
			}
			if got != tt.want {
				t.Fatalf("New built %T, want %s", c, tt.want)
			}
		})
	}
}

func TestChainAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	c, err := New(Options{Fill: FillOptions{DeviceBytes: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	dc := c.(DeviceController)
	dev := filling(true)
	n := testing.AllocsPerRun(1000, func() {
		c.Record(5)
		c.Admit(5, 4096)
		dc.AdmitTo(&dev, 5, 4096)
		c.Charge(4096)
	})
	if n != 0 {
		t.Fatalf("chain Record+Admit+Charge allocate %v times per run", n)
	}
}
