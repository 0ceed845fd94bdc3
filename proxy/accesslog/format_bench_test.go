package accesslog

import (
	"testing"
	"time"
)

// BenchmarkAppend: formatting one line of a 1 KiB hit, as a request pays.
func BenchmarkAppend(b *testing.B) {
	e := entry()
	e.Time = time.Now()
	var buf [stackLine]byte
	b.Run(FormatCombined, func(b *testing.B) {
		for b.Loop() {
			AppendCombined(buf[:0], e)
		}
	})
	b.Run(FormatJSON, func(b *testing.B) {
		for b.Loop() {
			AppendJSON(buf[:0], e)
		}
	})
}
