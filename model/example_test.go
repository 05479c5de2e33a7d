package model_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/spool-go/spool/model"
	_ "github.com/spool-go/spool/model/echo" // registers "echo"
)

// Open picks a model from a spec such as a --model flag's value. Provider
// packages register themselves when imported: model/echo as "echo",
// model/openai as "openai" and "ollama", model/anthropic as "anthropic".
func ExampleOpen() {
	m, err := model.Open("echo", model.Config{})
	if err != nil {
		log.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi there"}}}
	for ev, err := range m.Stream(context.Background(), req) {
		if err != nil {
			log.Fatal(err)
		}
		if ev.Kind == model.EventText {
			fmt.Print(ev.Text)
		}
	}
	fmt.Println()

	// An unknown provider's error lists the known ones.
	_, err = model.Open("nosuch:model", model.Config{})
	fmt.Println(errors.Is(err, model.ErrUnknownProvider))
	// Output:
	// echo: hi there
	// true
}
