package main

import (
	"strings"
	"testing"
	"time"

	"strata/blockdev"
)

// goldenBlock is foyer-bench's block format, filled with figures from the
// separated run of foyer PR #652 (seeds/001), so the two can be compared
// character by character.
const goldenBlock = `disk total iops: 12647.9
disk total throughput: 1.2 GiB/s
disk read iops: 11359.7
disk read throughput: 754.4 MiB/s
disk write iops: 1288.3
disk write throughput: 500.0 MiB/s
insert iops: 14049.9/s
insert throughput: 878.2 MiB/s
insert lat p50: 5us
insert lat p90: 9us
insert lat p99: 15us
insert lat p999: 26us
insert lat p9999: 56us
insert lat p99999: 317us
insert lat pmax: 659us
get iops: 35750.9/s
get miss: 60.72% 
get throughput: 877.7 MiB/s
get hit lat p50: 245us
get hit lat p90: 451us
get hit lat p99: 2047us
get hit lat p999: 2767us
get hit lat p9999: 4703us
get hit lat p99999: 6015us
get hit lat pmax: 6047us
get miss lat p50: 18us
get miss lat p90: 33us
get miss lat p99: 100us
get miss lat p999: 285us
get miss lat p9999: 345us
get miss lat p99999: 391us
get miss lat pmax: 453us
`

func goldenFigures() Figures {
	return Figures{
		DiskReadIOPS: 11359.66, DiskReadBps: 754.4 * (1 << 20), DiskWriteIOPS: 1288.26, DiskWriteBps: 500.0 * (1 << 20),
		InsertIOPS: 14049.9, InsertBps: 878.2 * (1 << 20),
		InsertLat: Latencies{5, 9, 15, 26, 56, 317, 659},
		GetIOPS:   35750.9, GetMiss: 0.6072, GetBps: 877.7 * (1 << 20),
		GetHitLat: Latencies{245, 451, 2047, 2767, 4703, 6015, 6047},
		GetMissLt: Latencies{18, 33, 100, 285, 345, 391, 453},
	}
}

func TestBlockGolden(t *testing.T) {
	f := goldenFigures()
	got := f.block()
	if got != goldenBlock {
		t.Fatalf("block differs:\n got:\n%s\nwant:\n%s", got, goldenBlock)
	}
	if n := strings.Count(got, "\n"); n != 32 {
		t.Fatalf("%d lines, want foyer-bench's 32", n)
	}
}

func TestPrintIntervalAndTotal(t *testing.T) {
	f := goldenFigures()
	var b strings.Builder
	printInterval(&b, 4, 30, &f)
	if want := "[4s/30s]\n" + goldenBlock + "\n"; b.String() != want {
		t.Fatalf("interval:\n%q", b.String())
	}
	b.Reset()
	printTotal(&b, &f, 1500*time.Microsecond)
	if want := "\nTotal:\n" + goldenBlock + "\nClose takes: 1.5ms\n"; b.String() != want {
		t.Fatalf("total:\n%q", b.String())
	}
}

func TestIEC(t *testing.T) {
	tests := []struct {
		n    uint64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{1<<20 - 1, "1024.0 KiB"}, // one decimal rounds up, as bytesize does
		{1 << 20, "1.0 MiB"}, {791348019, "754.7 MiB"}, {1288490188, "1.2 GiB"},
		{5 << 40, "5.0 TiB"}, {3 << 60, "3.0 EiB"},
	}
	for _, tc := range tests {
		if got := iec(tc.n); got != tc.want {
			t.Errorf("iec(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestHDRQuantisation pins the histogram's bounds: 2 significant digits
// print the top of each bucket, as foyer-bench's "17023us" shows.
func TestHDRQuantisation(t *testing.T) {
	tests := []struct {
		record time.Duration
		want   int64 // p50 with that one value
	}{
		{0, 0},
		{999 * time.Nanosecond, 0}, // truncated to whole µs
		{5 * time.Microsecond, 5},
		{255 * time.Microsecond, 255}, // exact below 256
		{256 * time.Microsecond, 257}, // then 2-µs buckets
		{1000 * time.Microsecond, 1003},
		{17000 * time.Microsecond, 17023},
		{-time.Second, 0},         // clamped
		{time.Minute, 10_027_007}, // clamped to 10 s, its bucket's top
		{2*time.Second + 7*time.Millisecond, 2_007_039},
	}
	for _, tc := range tests {
		h := newHist()
		recordMicros(h, tc.record)
		l := latenciesOf(h)
		if l.P50 != tc.want || l.Max != tc.want || l.P99999 != tc.want {
			t.Errorf("record %v: p50 %d, max %d, p99999 %d; want %d", tc.record, l.P50, l.Max, l.P99999, tc.want)
		}
	}
}

func TestLatenciesQuantiles(t *testing.T) {
	h := newHist()
	for i := 1; i <= 100000; i++ {
		recordMicros(h, time.Duration(i%100+1)*time.Microsecond) // 1..100 µs, uniform
	}
	for range 3 {
		recordMicros(h, 5*time.Millisecond)
	}
	// N = 100003; rank = ceil(q×N): p50 50002 → 51, p90 90003 → 91, p99
	// 99003 → 100, p9999 99994 → 100, p99999 100003 → 5 ms's bucket top.
	l := latenciesOf(h)
	want := Latencies{P50: 51, P90: 91, P99: 100, P999: 100, P9999: 100, P99999: 5023, Max: 5023}
	if l != want {
		t.Fatalf("got %+v, want %+v", l, want)
	}
}

func TestAnalyse(t *testing.T) {
	p := newPart()
	p.inserts, p.insertBytes = 200, 200<<10
	p.gets, p.misses, p.hitByte = 100, 25, 75<<10
	recordMicros(p.insertLat, 3*time.Microsecond)
	dev0 := blockdev.Stats{Reads: 10, ReadBytes: 1 << 20, Writes: 1, WriteBytes: 4 << 20}
	dev1 := blockdev.Stats{Reads: 30, ReadBytes: 3 << 20, Writes: 5, WriteBytes: 20 << 20}
	f := analyse(2*time.Second, p, dev0, dev1)
	if f.DiskReadIOPS != 10 || f.DiskReadBps != 1<<20 || f.DiskWriteIOPS != 2 || f.DiskWriteBps != 8<<20 ||
		f.InsertIOPS != 100 || f.InsertBps != 100<<10 || f.GetIOPS != 50 || f.GetMiss != 0.25 ||
		f.GetBps != 75<<9 || f.InsertLat.P50 != 3 || f.Seconds != 2 {
		t.Fatalf("%+v", f)
	}
	if f := analyse(0, newPart(), dev0, dev0); f.GetMiss != 0 || f.InsertIOPS != 0 {
		t.Fatalf("empty span: %+v", f)
	}
}
