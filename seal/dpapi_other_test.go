//go:build !windows

package seal

import (
	"errors"
	"testing"
)

func TestDPAPIUnavailable(t *testing.T) {
	if _, err := NewDPAPI(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("NewDPAPI: err = %v, want ErrUnavailable", err)
	}
	if p := Default(); p != nil {
		t.Fatalf("Default() = %T, want nil outside Windows", p)
	}
	var d DPAPI
	if _, err := d.Seal([]byte("x"), nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("zero DPAPI Seal: err = %v", err)
	}
	if _, err := d.Open([]byte{formatDPAPI, 1}, nil); !errors.Is(err, ErrWrongKey) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("zero DPAPI Open: err = %v", err)
	}
}
