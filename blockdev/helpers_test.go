package blockdev

// pattern fills p with bytes derived from seed.
func pattern(p []byte, seed byte) {
	for i := range p {
		p[i] = byte(i*7) ^ seed
	}
}
