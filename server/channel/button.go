package channel

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/transcript"
)

// An approval button's value is "d:approval:starter:mac": the decision
// (a allow once, s allow for the session, d deny), the approval id
// without its "apr_" prefix, the platform id of the person whose message
// asked for the tool, and an HMAC-SHA256 of those and the conversation's
// session id under Platform.Secret, cut to 9 bytes. It fits Telegram's 64
// bytes of callback data, and a press cannot name another conversation's
// approval or another starter without the secret.

const approvalPrefix = "apr_"

type button struct {
	decision spool.Decision
	kind     byte
	approval string
	starter  string
}

func (b button) label() string {
	switch b.kind {
	case 's':
		return "always allowed"
	case 'a':
		return "allowed"
	}
	return "denied"
}

func (r *Relay) button(conversation, approval string, kind byte, starter string) string {
	body := string(kind) + ":" + strings.TrimPrefix(approval, approvalPrefix) + ":" + starter
	return body + ":" + r.mac(conversation, body)
}

func (r *Relay) mac(conversation, body string) string {
	m := hmac.New(sha256.New, r.p.Secret)
	m.Write([]byte(conversation))
	m.Write([]byte{0})
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:9])
}

// openButton checks a pressed value against the conversation it was
// pressed in.
func (r *Relay) openButton(conversation, value string) (button, bool) {
	i := strings.LastIndexByte(value, ':')
	if i < 0 {
		return button{}, false
	}
	body, sum := value[:i], value[i+1:]
	if !hmac.Equal([]byte(sum), []byte(r.mac(conversation, body))) {
		return button{}, false
	}
	f := strings.Split(body, ":")
	if len(f) != 3 || len(f[0]) != 1 || f[1] == "" || f[2] == "" {
		return button{}, false
	}
	b := button{kind: f[0][0], approval: approvalPrefix + f[1], starter: f[2]}
	switch b.kind {
	case 'a':
		b.decision = spool.Decision{Allow: true, Scope: transcript.ApprovalScopeOnce}
	case 's':
		b.decision = spool.Decision{Allow: true, Scope: transcript.ApprovalScopeSession}
	case 'd':
		b.decision = spool.Decision{Reason: "denied in chat"}
	default:
		return button{}, false
	}
	return b, true
}
