package seal

import (
	"bytes"
	"testing"
)

func benchLine(b *testing.B, size int) (*AEAD, []byte, []byte) {
	a := testAEAD(b)
	plain := bytes.Repeat([]byte("x"), size)
	b.SetBytes(int64(size))
	return a, plain, AssociatedData("agent", "owner", "session-id", 42)
}

func BenchmarkSealLine1K(b *testing.B) {
	a, plain, ad := benchLine(b, 1024)
	for b.Loop() {
		if _, err := SealLine(a, plain, ad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenLine1K(b *testing.B) {
	a, plain, ad := benchLine(b, 1024)
	line, _ := SealLine(a, plain, ad)
	for b.Loop() {
		if _, err := OpenLine(a, line, ad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewAEAD(b *testing.B) {
	key := GenerateKey()
	for b.Loop() {
		if _, err := NewAEAD(key); err != nil {
			b.Fatal(err)
		}
	}
}
