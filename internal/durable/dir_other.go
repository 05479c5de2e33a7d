//go:build !windows

package durable

import "os"

// syncDir fsyncs the folder dir. Its Close error counts: on some file
// systems it is where a failed flush is reported.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
