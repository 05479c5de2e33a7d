package transfer

// Small chunks, so that tests cross many chunk boundaries with small
// sessions.
func init() { chunk = 7 }

// RealChunk is the chunk size spool uses, taken before the init above
// makes it 7 (package variables are set before init runs): benchmarks set
// it back so that they measure what the CLI does.
var RealChunk = chunk

// SetChunk sets how many entries are moved at a time until the returned
// function restores the previous size.
func SetChunk(n int) (restore func()) {
	old := chunk
	chunk = n
	return func() { chunk = old }
}
