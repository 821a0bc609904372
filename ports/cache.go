package ports

import (
	"context"
	"time"
)

// Cache keeps short-lived values shared by every instance that uses the same
// backend. A miss is (nil, false, nil).
type Cache interface {
	Get(ctx context.Context, key string) ([]byte, bool, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	Delete(ctx context.Context, key string) error
	Ping(ctx context.Context) error
}
