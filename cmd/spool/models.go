package main

import (
	_ "github.com/spool-go/spool/model/anthropic" // anthropic:
	_ "github.com/spool-go/spool/model/echo"      // echo
	_ "github.com/spool-go/spool/model/openai"    // openai:, ollama:
)
