package admission

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// filling is a fake Device.
type filling bool

func (f *filling) Filling() bool { return bool(*f) }

func newFiller(t testing.TB, rate, burst, deviceBytes int64, dwpd float64) (*Filler, *ManualClock) {
	t.Helper()
	clk := &ManualClock{}
	clk.Advance(time.Hour) // an arbitrary origin
	f, err := NewFiller(RateOptions{BytesPerSecond: rate, BurstBytes: burst, Clock: clk},
		FillOptions{DriveWritesPerDay: dwpd, DeviceBytes: deviceBytes})
	if err != nil {
		t.Fatal(err)
	}
	return f, clk
}

// TestFillerDecisions walks one Filler through the states of a cold
// device: rate first, then fill while the device has room, throttled when
// it has none, over budget once the day's writes reach the budget.
func TestFillerDecisions(t *testing.T) {
	f, clk := newFiller(t, mib, mib, 64*mib, 1) // budget 64 MiB a day, a week's held, a day's and a device's at start
	room, full := filling(true), filling(false)
	steps := []struct {
		name   string
		dev    Device
		charge int
		want   Decision
	}{
		{"rate tokens: admitted whatever the device", &full, mib, Admitted},
		{"rate spent, no device: throttled", nil, 0, Throttled},
		{"rate spent, device full: throttled", &full, 0, Throttled},
		{"rate spent, device with room: fill", &room, 64 * mib, Fill},
		{"still room, budget left", &room, 64 * mib, Fill},
		{"budget spent: over budget", &room, 0, OverBudget},
		{"budget spent, device full: throttled", &full, 0, Throttled},
	}
	for _, s := range steps {
		got := f.AdmitTo(s.dev, 1, 4096)
		if got != s.want {
			t.Fatalf("%s: %v, want %v (budget %d)", s.name, got, s.want, f.Budget())
		}
		if got.OK() != (s.want == Admitted || s.want == Fill) {
			t.Fatalf("%s: %v.OK() = %v", s.name, got, got.OK())
		}
		f.Charge(s.charge)
	}
	// Half a day refills half the budget; the rate's debt from the fill
	// was capped at one burst (1 s), so the rate admits again after 1 s
	// however much the fill wrote.
	clk.Advance(12 * time.Hour)
	if d := f.AdmitTo(&full, 1, 4096); d != Admitted {
		t.Fatalf("after the fill, device full: %v, want admitted by the rate", d)
	}
	f.Charge(10 * mib) // 10 s of rate debt
	if d := f.AdmitTo(&room, 1, 4096); d != Fill {
		t.Fatalf("after half a day: %v, want fill (budget %d)", d, f.Budget())
	}
	if b := f.Budget(); b < 20*mib || b > 32*mib {
		t.Fatalf("budget after half a day = %d, want about 22 MiB", b)
	}
	clk.Advance(time.Second + time.Millisecond)
	if d := f.Admit(1, 4096); d != Admitted {
		t.Fatalf("1 s after a fill capped the rate's debt: %v, want admitted", d)
	}
	// An idle fortnight refills a week's worth, no more.
	clk.Advance(14 * 24 * time.Hour)
	if b := f.Budget(); b != enduranceDays*64*mib {
		t.Fatalf("budget after an idle fortnight = %d, want a week's %d", b, enduranceDays*64*mib)
	}
}

// TestFillerStartBudget: the endurance budget starts with one day's worth
// plus one fill of the device, at most the week's worth the bucket holds,
// so a fresh device fills once at device speed whatever the DWPD (from
// 1/6 up) and keeps a day's budget for what comes next.
func TestFillerStartBudget(t *testing.T) {
	const device = 64 * mib
	for _, tc := range []struct {
		name string
		dwpd float64
		want int64
	}{
		{"1 DWPD: a day and a device", 1, 2 * device},
		{"3 DWPD", 3, 4 * device},
		{"1/2 DWPD", 0.5, device + device/2},
		{"1/6 DWPD: a week is a day and a device", 1.0 / 6, 7 * device / 6},
		{"1/8 DWPD: capped at a week", 0.125, 7 * device / 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := newFiller(t, mib, mib, device, tc.dwpd)
			// Rounding (bytes ↔ nanoseconds) may lose a few bytes, never add.
			if b := f.Budget(); b > tc.want || b < tc.want-16 {
				t.Fatalf("budget at start = %d, want %d", b, tc.want)
			}
			if tc.dwpd < 1.0/6 {
				return
			}
			// A fresh device fills once past the rate, and a day's budget
			// is left after it.
			f.Charge(mib) // rate spent
			room := filling(true)
			for written := int64(0); written < device; written += mib {
				if d := f.AdmitTo(&room, 1, mib); d != Fill {
					t.Fatalf("after %d of the device's %d bytes: %v, want fill", written, device, d)
				}
				f.Charge(mib)
			}
			if b, day := f.Budget(), int64(tc.dwpd*device); b < day-mib-16 {
				t.Fatalf("budget after one fill = %d, want a day's %d less the rate's 1 MiB", b, day)
			}
		})
	}
}

// TestFillerDebtCaps: writes far past both budgets hold the rate back at
// most one burst after a Fill, and the fill at most one day.
func TestFillerDebtCaps(t *testing.T) {
	f, clk := newFiller(t, mib, mib, 4<<30, 1)
	room := filling(true)
	f.Charge(1 << 40) // a terabyte written in the steady state
	if d := f.AdmitTo(&room, 1, 1); d != OverBudget {
		t.Fatalf("after 1 TiB: %v, want over-budget", d)
	}
	clk.Advance(24*time.Hour + time.Second)
	if d := f.AdmitTo(&room, 1, 1); d != Fill {
		t.Fatalf("a day after 1 TiB: %v, want fill (budget %d)", d, f.Budget())
	}
	clk.Advance(24 * time.Hour) // a day's budget (4 GiB) back
	f.Charge(1 << 30)           // the fill wrote 1 GiB: 1024 s at the rate
	if d := f.AdmitTo(&room, 1, 1); d != Fill {
		t.Fatalf("the fill's last entry: %v, want fill", d)
	}
	// The device is full from here: the rate's debt is what was charged
	// up to the last Fill, capped at one burst.
	clk.Advance(time.Second + time.Millisecond)
	if d := f.Admit(1, 1); d != Admitted {
		t.Fatalf("1 s after the fill: %v, want admitted (rate debt capped at one burst)", d)
	}
}

// TestChainFill: a chain passes the device to its Filler; a filter's "no"
// still comes first, and members that know no device are asked Admit.
func TestChainFill(t *testing.T) {
	f, _ := newFiller(t, mib, mib, 64*mib, 1)
	f.Charge(2 * mib) // rate spent
	room := filling(true)
	refuse := &toggle{}
	c := Chain(refuse, f).(DeviceController)
	if d := c.AdmitTo(&room, 1, 1); d != Fill {
		t.Fatalf("chain, device with room: %v, want fill", d)
	}
	if d := c.Admit(1, 1); d != Throttled {
		t.Fatalf("chain Admit without a device: %v, want throttled", d)
	}
	refuse.no.Store(true)
	if d := c.AdmitTo(&room, 1, 1); d != Rejected {
		t.Fatalf("chain, filter refuses: %v, want rejected", d)
	}
}

type toggle struct{ no atomic.Bool }

func (t *toggle) Admit(uint64, int) Decision {
	if t.no.Load() {
		return Rejected
	}
	return Admitted
}
func (*toggle) Record(uint64) {}
func (*toggle) Charge(int)    {}

// TestFillerConcurrentBudget: goroutines filling a device at once write
// no more than the budget at start (one day of one drive write a day
// plus one fill of the device) plus one entry each (admission is optimistic: each may be admitted just
// before another's Charge lands).
func TestFillerConcurrentBudget(t *testing.T) {
	const device, entry, workers = 64 * mib, 64 * kib, 8
	const budget = 2 * device
	f, _ := newFiller(t, kib, kib, device, 1)
	f.Charge(kib) // rate spent: everything below is fill
	room := filling(true)
	var filled atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2 * budget / entry {
				switch d := f.AdmitTo(&room, 1, entry); d {
				case Fill:
					filled.Add(entry)
					f.Charge(entry)
				case OverBudget:
				default:
					t.Errorf("decision %v, want fill or over-budget", d)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := filled.Load(); got < budget-kib || got > budget+workers*entry {
		t.Fatalf("filled %d B, want the budget %d (+ at most %d)", got, budget, workers*entry)
	}
}

func TestFillOptions(t *testing.T) {
	tests := []struct {
		name string
		o    FillOptions
		bad  bool
	}{
		{"defaults", FillOptions{}, false},
		{"a device", FillOptions{DeviceBytes: 1 << 40}, false},
		{"fractional", FillOptions{DriveWritesPerDay: 0.3, DeviceBytes: 1 << 40}, false},
		{"negative dwpd", FillOptions{DriveWritesPerDay: -1}, true},
		{"NaN dwpd", FillOptions{DriveWritesPerDay: math.NaN()}, true},
		{"too many dwpd", FillOptions{DriveWritesPerDay: 101}, true},
		{"negative device", FillOptions{DeviceBytes: -1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.EnsureDefaults()
			err := o.Validate()
			if (err != nil) != tt.bad || (err != nil && !errors.Is(err, ErrInvalidOptions)) {
				t.Fatalf("Validate(%+v) = %v, want bad %v", o, err, tt.bad)
			}
		})
	}
	o := FillOptions{}
	o.EnsureDefaults()
	if o.DriveWritesPerDay != DefaultDriveWritesPerDay {
		t.Fatalf("default dwpd %g", o.DriveWritesPerDay)
	}
	if _, err := NewFiller(RateOptions{}, FillOptions{}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("NewFiller without device bytes: %v", err)
	}
	if _, err := New(Options{Fill: FillOptions{DriveWritesPerDay: -1}}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("New with a bad fill: %v", err)
	}
}
