package models

import "context"

// AnyWebhookEndpoint loads a live endpoint of any installation or account by ID, for support
// (`shotflow admin webhooks`), which learns the endpoint's scope from it; ErrNotFound for a missing
// or deleted one. The APIs load endpoints through their scope (WebhookEndpoint).
func (s *Store) AnyWebhookEndpoint(ctx context.Context, id string) (*WebhookEndpoint, error) {
	return findWebhookEndpoint(s.conn(ctx), id)
}
