package telegram

import (
	"regexp"
	"strings"
	"sync"

	"github.com/spool-go/spool/server/channel/internal/markdown"
)

// html is Telegram's HTML parse mode: <b>, <i>, <s>, <code>, <pre>, <a
// href>, <blockquote>, with &, < and > escaped everywhere else.
var html = markdown.Style{
	Escape: escape,
	Bold:   [2]string{"<b>", "</b>"},
	Italic: [2]string{"<i>", "</i>"},
	Strike: [2]string{"<s>", "</s>"},
	Code:   [2]string{"<code>", "</code>"},
	Pre: func(lang, code string) string {
		code = escape(strings.TrimRight(code, "\n"))
		if lang = languageName().FindString(lang); lang != "" {
			return `<pre><code class="language-` + lang + `">` + code + "</code></pre>"
		}
		return "<pre>" + code + "</pre>"
	},
	Link: func(url, text string) string {
		if text == "" {
			text = escape(url)
		}
		return `<a href="` + attr.Replace(url) + `">` + text + "</a>"
	},
	Quote: func(s string) string { return "<blockquote>" + s + "</blockquote>" },
}

var (
	// languageName is compiled on first use, not in every process that
	// links the driver.
	languageName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_+#-]{1,32}`) })
	escaper      = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	attr         = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
)

func escape(s string) string { return escaper.Replace(s) }

// Format renders Markdown in Telegram's HTML parse mode.
func Format(md string) string { return markdown.Render(md, html) }
