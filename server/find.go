package server

import (
	"net/http"
	"strings"

	"github.com/spool-go/spool/store"
)

// Finding and naming conversations:
//
//	GET   /v1/search?q=&limit=&session=   {"hits":[{sessionId, entryId, snippet, time, title}]}, newest first
//	PATCH /v1/sessions/{id}               {"title"} → 200, the session's info with its new title

// searchHit is one hit of GET /v1/search, with its session's title.
type searchHit struct {
	store.SearchHit
	Title string `json:"title"`
}

// handleSearch is GET /v1/search?q=&limit=&session=: the caller's
// messages that contain every word of q (ignoring case), newest first,
// each with a snippet around the match and its session's title.
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	ctx, _, aerr := s.withUser(r)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	q := r.URL.Query()
	if strings.TrimSpace(q.Get("q")) == "" {
		s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, `"q" (the words to find) is missing or blank`))
		return
	}
	limit, aerr := parseLimit(r)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	hits, err := s.agent.Search(ctx, store.SearchQuery{Text: q.Get("q"), Session: q.Get("session"), Limit: limit})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	titles := map[string]string{}
	out := make([]searchHit, 0, len(hits))
	for _, h := range hits {
		title, ok := titles[h.SessionID]
		if !ok {
			// At most limit sessions: one lookup each, from the list record.
			if info, err := s.agent.SessionInfo(ctx, h.SessionID); err == nil {
				title = info.Title
			}
			titles[h.SessionID] = title
		}
		out = append(out, searchHit{SearchHit: h, Title: title})
	}
	writeJSON(w, http.StatusOK, struct {
		Hits []searchHit `json:"hits"`
	}{out})
}

type renameRequest struct {
	Title *string `json:"title"`
}

// handleRename is PATCH /v1/sessions/{id} {"title"}: the session renamed
// (spool.Session.Rename, a session.title entry), answered with its info.
func (s *Server) handleRename(w http.ResponseWriter, r *http.Request) {
	var req renameRequest
	if err := decodeJSON(r, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Title == nil || strings.TrimSpace(*req.Title) == "" {
		s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, `"title" is missing or blank`))
		return
	}
	ctx, sess, ok := s.existing(w, r)
	if !ok {
		return
	}
	if err := sess.Rename(ctx, *req.Title); err != nil {
		s.writeError(w, r, err)
		return
	}
	info, err := s.agent.SessionInfo(ctx, sess.ID())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}
