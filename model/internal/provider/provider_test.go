package provider

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

func TestDescribeKeepsOnlyIdentifiers(t *testing.T) {
	got := Describe("Too Many Requests", "type", "rate_limit_error", "code", "the prompt was: secret stuff")
	if got != "Too Many Requests; type rate_limit_error" {
		t.Fatal(got)
	}
	if Describe("", "type", "") != "error" {
		t.Fatal("empty what")
	}
}

func TestClassify(t *testing.T) {
	ctx := context.Background()
	errAPI := errors.New("api")
	api := func(err error) error {
		if errors.Is(err, errAPI) {
			return &model.Error{Code: transcript.CodeAuth}
		}
		return nil
	}
	cases := []struct {
		err  error
		code transcript.ErrorCode
	}{
		{errAPI, transcript.CodeAuth},
		{io.ErrUnexpectedEOF, transcript.CodeProviderError},
		{errors.New("odd"), transcript.CodeProviderError},
	}
	for _, c := range cases {
		var me *model.Error
		if err := Classify(ctx, c.err, api); !errors.As(err, &me) || me.Code != c.code {
			t.Errorf("%v: %v, want code %s", c.err, err, c.code)
		}
	}
	if Classify(ctx, nil, api) != nil {
		t.Fatal("nil error classified")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := Classify(done, errAPI, api); !errors.Is(err, context.Canceled) {
		t.Fatalf("a done context must win: %v", err)
	}
}
