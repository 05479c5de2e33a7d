package filestore

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

func init() {
	store.Register("file", func(ctx context.Context, u *url.URL) (store.Store, error) {
		return openURL(ctx, u)
	})
}

// Open opens the store a "file:" URL names:
//
//	file:                       the default folder (DefaultRoot)
//	file:/abs/path, file:///abs/path
//	file:relative/path          relative to the working directory
//	file:C:/Users/me/sessions   on Windows
//
// Query parameters set the retention (see WithRetention):
//
//	maxSessions=N   keep the newest N sessions per agent and owner; 0 is no limit (default 50)
//	maxAge=D        delete sessions idle longer than D, a Go duration ("720h") or days ("90d"); 0 is no limit (default 90d)
//	retention=none  keep everything (the same as maxSessions=0&maxAge=0)
//
// An unknown parameter is an error, so that a misspelt one does not pass
// unnoticed. opts apply after the URL's. store.Open("file:…") is Open
// without opts.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	u, err := storekit.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("filestore: bad file URL: %w", err)
	}
	return openURL(ctx, u, opts...)
}

func openURL(ctx context.Context, u *url.URL, opts ...Option) (*Store, error) {
	if !strings.EqualFold(u.Scheme, "file") {
		return nil, fmt.Errorf("filestore: scheme %q is not file", u.Scheme)
	}
	root, err := urlRoot(u)
	if err != nil {
		return nil, err
	}
	r, err := urlRetention(u.Query())
	if err != nil {
		return nil, err
	}
	return New(ctx, root, append([]Option{WithRetention(r)}, opts...)...)
}

func urlRoot(u *url.URL) (string, error) {
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("filestore: file URL with host %q: only local folders are supported", u.Host)
	}
	path := u.Path
	if u.Opaque != "" {
		p, err := url.PathUnescape(u.Opaque)
		if err != nil {
			return "", fmt.Errorf("filestore: bad file URL path: %w", err)
		}
		path = p
	}
	if path == "" {
		return DefaultRoot()
	}
	// file:///C:/x parses with the path /C:/x.
	if runtime.GOOS == "windows" && len(path) >= 3 && path[0] == '/' && path[2] == ':' {
		path = path[1:]
	}
	return path, nil
}

func urlRetention(q url.Values) (store.Retention, error) {
	r := store.DefaultRetention
	for name, vals := range q {
		if len(vals) != 1 {
			return r, fmt.Errorf("filestore: URL parameter %s given %d times", name, len(vals))
		}
		v := vals[0]
		switch name {
		case "maxSessions":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return r, fmt.Errorf("filestore: maxSessions=%q: want a count, 0 for no limit", v)
			}
			r.MaxSessions = n
		case "maxAge":
			d, err := parseAge(v)
			if err != nil {
				return r, fmt.Errorf("filestore: maxAge=%q: want a duration like 720h or 90d, 0 for no limit", v)
			}
			r.MaxAge = d
		case "retention":
			if v != "none" {
				return r, fmt.Errorf("filestore: retention=%q: the only value is none", v)
			}
		default:
			return r, fmt.Errorf("filestore: unknown URL parameter %q (known: maxSessions, maxAge, retention)", name)
		}
	}
	if q.Get("retention") == "none" {
		if q.Has("maxSessions") || q.Has("maxAge") {
			return r, fmt.Errorf("filestore: retention=none with maxSessions or maxAge")
		}
		r = store.Retention{}
	}
	return r, nil
}

// maxDays is the most days a Duration holds (about 292 years).
const maxDays = int(math.MaxInt64 / int64(24*time.Hour))

func parseAge(v string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		// Over maxDays, n days do not fit a Duration: the product wraps,
		// to a negative age (no limit) or a short one (sessions deleted).
		if err != nil || n < 0 || n > maxDays {
			return 0, fmt.Errorf("bad days")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration")
	}
	return d, nil
}
