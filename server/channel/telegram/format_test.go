package telegram_test

import (
	"strings"
	"testing"

	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/server/channel/telegram"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct{ md, want string }{
		{"**bold** and *it* and ~~gone~~", "<b>bold</b> and <i>it</i> and <s>gone</s>"},
		{"`a < b`", "<code>a &lt; b</code>"},
		{`[docs](https://x.test/?a=1&b="2")`, `<a href="https://x.test/?a=1&amp;b=&quot;2&quot;">docs</a>`},
		{"# Title\n\ntext", "<b>Title</b>\n\ntext"},
		{"- one\n- two", "• one\n• two"},
		{"> quoted", "<blockquote>quoted</blockquote>"},
		{"```go\nif a < b {}\n```", `<pre><code class="language-go">if a &lt; b {}</code></pre>`},
		{"```\nplain\n```", "<pre>plain</pre>"},
		{"<script>x</script> & co", "&lt;script&gt;x&lt;/script&gt; &amp; co"},
		// Telegram renders no table: aligned columns in <pre>, escaped.
		{"| Who | <3 |\n|---|--:|\n| *Tom* & Jerry | 12 |", "<pre>Who          &lt;3\n-----------  --\nTom &amp; Jerry  12</pre>"},
	} {
		if got := telegram.Format(c.md); got != c.want {
			t.Errorf("%q: %q, want %q", c.md, got, c.want)
		}
	}
}

// A long answer that ends with reference-link definitions: the piece that
// holds only them renders to nothing and is no part (Telegram refuses an
// empty message, and a refused part ends the answer there).
func TestSplitNoEmptyPart(t *testing.T) {
	text := strings.Repeat("word ", 790) + "see [the docs][1] and [the API][2].\n\n[1]: https://example.com/docs/getting-started/installation\n[2]: https://example.com/reference/api/v2/endpoints"
	parts := channel.Split(text, telegram.Limit, channel.UTF16Len, telegram.Format)
	if len(parts) == 0 {
		t.Fatal("no parts")
	}
	for i, p := range parts {
		if strings.TrimSpace(p) == "" {
			t.Fatalf("part %d of %d is empty", i, len(parts))
		}
	}
}
