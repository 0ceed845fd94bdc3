package admission

// An internal example: e2e's layering test forbids admission_test from
// importing strata/admission (admission may import nothing of ours).

import (
	"context"
	"fmt"
)

// Example shows the three call sites hybrid wires: the memory tier records
// accesses, eviction asks Admit, the flusher charges what it wrote.
func Example() {
	clock := NewCoarseClock(0) // owned by the cache, closed last
	defer clock.Close(context.Background())
	ctl, err := New(Options{
		RateLimit: RateOptions{BytesPerSecond: 100 << 20, Clock: clock},
	})
	if err != nil {
		panic(err)
	}
	const once, twice = 0x1111, 0x2222 // key hashes
	ctl.Record(once)                   // inserted after a miss, never read again
	ctl.Record(twice)                  // inserted after a miss
	ctl.Record(twice)                  // a hit

	for _, h := range []uint64{once, twice} { // both evicted from memory
		d := ctl.Admit(h, 64<<10)
		fmt.Printf("%#x: %v\n", h, d)
		if d.OK() {
			// ... serialised into a flush buffer; after the pwrite:
			ctl.Charge(68 << 10) // header and alignment included
		}
	}
	// Output:
	// 0x1111: rejected
	// 0x2222: admitted
}
