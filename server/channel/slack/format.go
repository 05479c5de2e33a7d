package slack

import (
	"strings"

	"github.com/spool-go/spool/server/channel/internal/markdown"
)

// mrkdwn is Slack's markup: *bold*, _italic_, ~strike~, `code`, ```pre```,
// <url|text>, and &, < and > escaped as entities.
var mrkdwn = markdown.Style{
	Escape: escape,
	Bold:   [2]string{"*", "*"},
	Italic: [2]string{"_", "_"},
	Strike: [2]string{"~", "~"},
	Code:   [2]string{"`", "`"},
	Pre: func(_, code string) string {
		return "```\n" + escape(strings.TrimRight(code, "\n")) + "\n```"
	},
	Link: func(url, text string) string {
		url = strings.NewReplacer("|", "%7C", ">", "%3E", "<", "%3C", "&", "&amp;").Replace(url)
		if text == "" || text == url {
			return "<" + url + ">"
		}
		return "<" + url + "|" + text + ">"
	},
	Quote: func(s string) string { return "> " + strings.ReplaceAll(s, "\n", "\n> ") },
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func escape(s string) string { return escaper.Replace(s) }

// Format renders Markdown as Slack mrkdwn.
func Format(md string) string { return markdown.Render(md, mrkdwn) }
