package model

import "errors"

// ErrNoAPIKey is wrapped by the error of a hosted provider's model that has
// no API key to send (Checker, and the first request's error).
var ErrNoAPIKey = errors.New("model: no API key")

// Checker is implemented by models that can tell, before any request, that
// they cannot work, so that a program can say so before it starts a
// session: a model of a hosted API with no key, say. Check must not call
// the network; nil means the model may work, not that it will.
type Checker interface {
	Check() error
}
