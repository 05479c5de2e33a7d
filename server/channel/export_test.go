package channel

import "time"

// SetCloseGrace sets how long r's platform calls may go on after Close.
func SetCloseGrace(r *Relay, d time.Duration) { r.closeGrace = d }
