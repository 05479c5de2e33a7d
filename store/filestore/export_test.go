package filestore

// SetFaultHook makes every append call f, with the transcript's path,
// after writing its line and before syncing it; an error from f fails the
// append as an I/O error would. It returns the func that removes f. Tests
// using it must not run in parallel with others.
func SetFaultHook(f func(path string) error) (restore func()) {
	faultHook = f
	return func() { faultHook = nil }
}
