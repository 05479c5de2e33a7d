package transfer

// Small chunks, so that tests cross many chunk boundaries with small
// sessions.
func init() { chunk = 7 }
