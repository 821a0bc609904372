package api_test

import (
	"os"
	"testing"

	"github.com/profilesvc/profilesvc/tests/testenv"
)

// TestMain fails the run when a test leaves Redis keys under the run's
// prefix: instances started with REDIS_URL write under one given to them.
func TestMain(m *testing.M) { os.Exit(testenv.RunCheckingRedisKeys(m)) }
