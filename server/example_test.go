package server_test

import (
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store/memstore"
)

// The server is an http.Handler: mount it under a prefix of your own mux,
// beside your own routes.
func Example() {
	agent, err := spool.New(spool.Config{
		Name:  "support",
		Model: echo.New(), // offline; use a real model in production
		Store: memstore.New(),
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.Handle("/agent/", http.StripPrefix("/agent", server.New(agent, server.Options{
		Logger: slog.New(slog.DiscardHandler), // quiet for the example; the default is slog.Default()
	})))

	ts := httptest.NewServer(mux) // in production: http.ListenAndServe("127.0.0.1:8080", mux)
	defer ts.Close()

	res, err := http.Post(ts.URL+"/agent/invoke", "application/json",
		strings.NewReader(`{"prompt":"Where is order 1042?","sessionId":"ticket-1042"}`))
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(res.StatusCode, strings.Contains(string(body), `"text":"echo: Where is order 1042?"`))

	res, _ = http.Get(ts.URL + "/agent/v1/sessions/ticket-1042/messages?order=asc")
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(res.StatusCode, strings.Count(string(body), `"role"`), "messages")

	res, _ = http.Get(ts.URL + "/healthz")
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Print(string(body))
	// Output:
	// 200 true
	// 200 2 messages
	// ok
}
