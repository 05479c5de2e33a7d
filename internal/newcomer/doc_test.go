// Package newcomer_test holds the tests of what a newcomer meets first: the
// README's claims and code, and the library's front door with nothing but
// the package spool and a model imported. It has no code of its own.
package newcomer_test
