package admission

// Controller decides whether an entry may be written to the disk tier.
//
// Who calls what (hybrid owns all three call sites):
//   - Record: the memory tier, once per request that touches a key: on a
//     hit (memory or disk) and on Insert (which follows a miss). Not on the
//     miss itself, or one request would count twice and one-hit wonders
//     would pass a frequency filter.
//   - Admit: hybrid, just before it hands an entry to a flusher (on eviction
//     from memory, on insert when writing on insertion, on reinsertion by a
//     reclaimer), with the entry's estimated serialised size. Anything but
//     Admitted means: skip the disk write (and delete an older disk copy of
//     the key, so a stale value cannot be served later). It never fails
//     the request.
//   - Charge: each flusher, after each device write, with the bytes really
//     written: the aligned length passed to WriteAt, including entry
//     headers, padding, index pages and reinsertions.
//
// All methods are safe for concurrent use, never block and never allocate.
type Controller interface {
	// Admit reports whether an entry whose key hashes to hash and whose
	// serialised size is about size bytes may be written to disk.
	Admit(hash uint64, size int) Decision
	// Record tells the controller that the key hashing to hash was
	// accessed. Controllers that do not learn from accesses ignore it.
	Record(hash uint64)
	// Charge tells the controller that n bytes were written to the device.
	// n <= 0 is ignored. Controllers that do not meter bytes ignore it.
	Charge(n int)
}

// Decision is a Controller's answer. It is more than a bool so that hybrid
// can count the kinds of "yes" and "no" apart: Rejected (the key is not
// worth a disk write; working as intended), Throttled (the per-second
// write budget is spent; an operator may want a higher rate), OverBudget
// (the device had room to fill, but the day's endurance budget is spent),
// Admitted (within the per-second rate) and Fill (past the rate, to fill
// a device's free space; see Filler).
type Decision uint8

const (
	// Rejected: the entry is not worth a disk write. The zero value, so a
	// forgotten assignment errs on the side of not writing.
	Rejected Decision = iota
	// Admitted: the entry may be written.
	Admitted
	// Throttled: the entry may be worth writing, but the byte budget is
	// spent for now.
	Throttled
	// Fill: admitted past the per-second rate, because the device can
	// take it without overwriting live data (Filler).
	Fill
	// OverBudget: throttled although the device had room to fill: the
	// endurance budget (Filler) is spent for today.
	OverBudget
)

// OK reports whether d lets the entry be written: Admitted or Fill.
func (d Decision) OK() bool { return d == Admitted || d == Fill }

// String returns "admitted", "rejected", "throttled", "fill",
// "over-budget" or "invalid".
func (d Decision) String() string {
	switch d {
	case Admitted:
		return "admitted"
	case Rejected:
		return "rejected"
	case Throttled:
		return "throttled"
	case Fill:
		return "fill"
	case OverBudget:
		return "over-budget"
	default:
		return "invalid"
	}
}

// chain is the Controller returned by Chain.
type chain []Controller

var _ Controller = chain(nil)

// Chain returns a Controller that admits only what every member admits.
// Admit asks the members in order and returns the first answer that is not
// OK, so later members are not asked (put the one whose "no" says
// more first: a frequency filter before a rate limiter makes Rejected mean
// "cold" and Throttled mean "hot but over budget"). Record and Charge go to
// every member. Nil members are skipped and nested chains are flattened;
// Chain() admits everything, and a chain of one member is that member.
// The chain is a DeviceController: AdmitTo passes the device to the
// members that are, and asks the others Admit; its answer is Fill when a
// member said Fill and none said no.
func Chain(controllers ...Controller) Controller {
	flat := make(chain, 0, len(controllers))
	for _, c := range controllers {
		switch c := c.(type) {
		case nil:
		case chain:
			flat = append(flat, c...)
		default:
			flat = append(flat, c)
		}
	}
	if len(flat) == 1 {
		return flat[0]
	}
	return flat
}

// Admit implements Controller.
func (ch chain) Admit(hash uint64, size int) Decision {
	return ch.AdmitTo(nil, hash, size)
}

// AdmitTo implements DeviceController.
func (ch chain) AdmitTo(dev Device, hash uint64, size int) Decision {
	out := Admitted
	for _, c := range ch {
		d := admitTo(c, dev, hash, size)
		if !d.OK() {
			return d
		}
		if d == Fill {
			out = Fill
		}
	}
	return out
}

// Record implements Controller.
func (ch chain) Record(hash uint64) {
	for _, c := range ch {
		c.Record(hash)
	}
}

// Charge implements Controller.
func (ch chain) Charge(n int) {
	for _, c := range ch {
		c.Charge(n)
	}
}
