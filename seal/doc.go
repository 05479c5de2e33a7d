// Package seal protects transcript lines at rest.
//
// A Protector seals each line on its own. Stores bind every line to its
// place with associated data (AssociatedData: the session's agent, owner and
// id and the line's position), so a line copied into another session, or
// moved within one, no longer opens: Open fails with ErrTampered, which a
// store reports as a corrupt record.
//
// # Protectors
//
//   - AEAD (NewAEAD): XChaCha20-Poly1305 under a 32-byte key, on every OS.
//     The key comes from SPOOL_ENCRYPTION_KEY (KeyFromEnv) or from a key file
//     created on first use (LoadOrCreateKeyFile, DefaultKeyFile).
//   - DPAPI (NewDPAPI): Windows only; the key is the current user's DPAPI
//     master key, so no key file is needed.
//   - Keyring (NewKeyring): seals with a current protector and opens with
//     the current one or any previous one, for key rotation.
//
// Default returns the platform's protection that needs no key to be kept:
// DPAPI on Windows and nil (none) elsewhere. No store applies it by
// itself: a store without a protector (filestore.WithProtector,
// sqlitestore.WithProtector) writes plain JSON on every OS; pass
// Default() to get it.
//
// # Sealed format
//
// Every sealed value starts with one format byte:
//
//	0x01  AEAD, XChaCha20-Poly1305, version 1
//	0x02  Windows DPAPI, version 1
//
// An AEAD sealed value is, byte by byte:
//
//	[0]       0x01
//	[1:9]     key id: the first 8 bytes of HKDF-SHA256(key, no salt, info "spool/seal/v1 key id")
//	[9:33]    nonce: 24 random bytes
//	[33:]     ciphertext (as long as the plaintext) followed by the 16-byte Poly1305 tag
//
// The cipher key is HKDF-SHA256(key, no salt, info "spool/seal/v1 xchacha20poly1305"),
// never the key itself, and the associated data given to the cipher is bytes
// [0:9] followed by the caller's associated data, so the header cannot be
// changed unnoticed. The key id is a fingerprint that reveals nothing usable
// about the key; it lets Open tell a value sealed under another key
// (ErrWrongKey, checked before any decryption) from one that was changed or
// moved (ErrTampered). A changed key id therefore reads as ErrWrongKey: from
// the outside the two cannot be told apart. Random 24-byte nonces make nonce
// reuse negligible for any number of lines one key will ever seal.
//
// A DPAPI sealed value is 0x02 followed by the blob CryptProtectData returns.
//
// A value in one format given to a protector of the other fails with
// ErrWrongKey; an unknown format byte, or a value too short for its format,
// fails with ErrTampered.
//
// # Lines
//
// SealLine turns a sealed value into one text line: the marker '!' followed
// by the value in unpadded standard base64 (RFC 4648 section 4, no '='),
// with no newline. Plain JSON transcript lines start with '{', so
// IsSealedLine tells the two apart from the first byte. OpenLine reverses
// SealLine.
//
// # What is protected and what is not
//
// Sealing protects the content of each line (prompts, answers, tool calls
// and results, metadata inside the entry) against anyone who can read the
// files or database rows but does not hold the key, and makes any change,
// reordering, truncation inside a line, or copying of a line between
// sessions or positions detectable.
//
// It does not hide file names or keys (which carry session ids, agent and
// owner names), sizes (sealing an n-byte line gives about 4n/3 + 66 bytes,
// so lengths show through), timing of writes, or the
// number of entries in a session. Dropping whole lines from the end of a session is not detected
// by seal alone: positions are bound, the count is not.
//
// A key is only as safe as the account that holds it: anyone who can read
// the key file, the environment of the process, or (for DPAPI) act as the
// user can read every sealed line. The key file must not live next to the
// data it protects in backups or shared folders.
//
// # Durability
//
// Seal and Open touch no files. LoadOrCreateKeyFile writes the key file
// completely, with fsync of the file and its folder (package
// internal/durable says exactly what that guarantees), before it returns,
// so a key that was used to seal anything is on disk.
package seal
