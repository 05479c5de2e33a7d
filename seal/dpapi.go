package seal

import "errors"

// ErrUnavailable: the protector does not exist on this OS (DPAPI outside
// Windows).
var ErrUnavailable = errors.New("seal: DPAPI is not available on this OS (Windows only)")
