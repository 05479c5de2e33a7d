package main

import (
	"context"
	"time"

	"github.com/spool-go/spool/tool"
)

// demoTools are the tools spool chat and spool serve offer, so that tool
// calls and approvals can be tried with any model, the echo model included
// ("/call get_time {}", "/call save_note {"text":"…"}"). save_note needs
// approval in tool mode ask; it keeps nothing (the note is in the
// transcript, as the call's arguments and result).
func demoTools() []*tool.Tool {
	type timeArgs struct {
		Zone string `json:"zone,omitempty" jsonschema:"an IANA time zone such as Europe/Paris; UTC when empty"`
	}
	type noteArgs struct {
		Text string `json:"text" jsonschema:"the note to save"`
	}
	return []*tool.Tool{
		tool.New("get_time", "Tell the current date and time.", func(ctx context.Context, a timeArgs) (string, error) {
			loc := time.UTC
			if a.Zone != "" {
				l, err := time.LoadLocation(a.Zone)
				if err != nil {
					return "", err
				}
				loc = l
			}
			return time.Now().In(loc).Format(time.RFC1123), nil
		}, tool.WithTimeout(5*time.Second)),
		tool.New("save_note", "Save a note for later.", func(ctx context.Context, a noteArgs) (string, error) {
			return "saved note: " + a.Text, nil
		}, tool.RequireApproval(), tool.WithTimeout(5*time.Second)),
	}
}
