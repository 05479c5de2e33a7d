//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package flock

import "os"

func lock(f *os.File) error                { return ErrUnsupported }
func tryLock(f *os.File) (bool, error)     { return false, ErrUnsupported }
func unlock(f *os.File)                    {}
func removed(f *os.File, path string) bool { return false }
func release(f *os.File, path string)      { f.Close() }
