package main

import (
	"testing"

	"github.com/hoox/hoox/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }
