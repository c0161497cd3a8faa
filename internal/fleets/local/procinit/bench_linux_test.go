//go:build linux

package procinit

import "testing"

// BenchmarkStart: starting a process under its init and waiting for it
// (sh -c true), against starting it directly.
func BenchmarkStart(b *testing.B) {
	c, err := New()
	if err != nil {
		b.Skip(err)
	}
	b.Run("init", func(b *testing.B) {
		for b.Loop() {
			p, err := c.Start(shell("true"))
			if err != nil {
				b.Fatal(err)
			}
			p.Wait()
		}
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if err := shell("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
