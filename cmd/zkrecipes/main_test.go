package main

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

func TestMain(m *testing.M) { testzk.Main(m) }
