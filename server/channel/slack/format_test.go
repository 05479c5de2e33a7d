package slack_test

import (
	"testing"

	"github.com/spool-go/spool/server/channel/slack"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct{ md, want string }{
		{"**bold** and *it* and ~~gone~~", "*bold* and _it_ and ~gone~"},
		{"`a < b`", "`a &lt; b`"},
		{"[docs](https://x.test/?a=1&b=2)", "<https://x.test/?a=1&amp;b=2|docs>"},
		{"<https://x.test>", "<https://x.test>"},
		{"# Title\n\ntext", "*Title*\n\ntext"},
		{"- one\n- two", "• one\n• two"},
		{"1. one\n2. two", "1. one\n2. two"},
		{"> quoted", "> quoted"},
		{"```go\nif a < b {}\n```", "```\nif a &lt; b {}\n```"},
		{"Tom & Jerry <3", "Tom &amp; Jerry &lt;3"},
		// Slack renders no table: aligned columns in a code block, escaped.
		{"| Who | <3 |\n|---|--:|\n| *Tom* & Jerry | 12 |", "```\nWho          &lt;3\n-----------  --\nTom &amp; Jerry  12\n```"},
	} {
		if got := slack.Format(c.md); got != c.want {
			t.Errorf("%q: %q, want %q", c.md, got, c.want)
		}
	}
}
