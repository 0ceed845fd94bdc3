package main

import (
	"fmt"
	"strconv"
	"strings"
)

// sizeUnits maps a suffix (lower case) to its multiplier. Every unit is
// binary: "k" and "KiB" both mean 1024, as the sample origin reads them.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30},
	{"b", 1}, {"", 1},
}

// maxSize bounds every parsed size (1 TiB): no flag or URL sizes more.
const maxSize = int64(1) << 40

// parseSize reads "1k", "256KiB", "64MiB", "1GiB" or a byte count.
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for _, u := range sizeUnits {
		num, ok := strings.CutSuffix(t, u.suffix)
		if !ok || num == "" {
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			continue
		}
		if n < 0 || n > maxSize/u.mult {
			return 0, fmt.Errorf("%w: %q out of range", ErrSize, s)
		}
		return n * u.mult, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrSize, s)
}

// formatSize prints n with the largest binary unit that divides it.
func formatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strconv.FormatInt(n, 10)
}
