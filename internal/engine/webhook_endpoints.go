package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/ids"
	"github.com/shotflow/shotflow/models/instant"
)

// The webhook endpoints integrators manage themselves (api/openapi.yaml and
// api/external/openapi.yaml: /webhook-endpoints): both APIs call these use cases with their scope.

// Limits of an endpoint's fields (api/openapi.yaml, WebhookEndpoint).
const (
	MaxEndpointURLLength         = 2048
	MaxEndpointDescriptionLength = 500 // characters
)

// Page sizes of the webhook lists (GET /webhook-endpoints, /webhook-deliveries, /events).
const (
	DefaultWebhookPageLimit = 50
	MaxWebhookPageLimit     = 200
	maxWebhookCursorLength  = 512
)

// The views the webhook use cases answer (internal/webhooks/views.go), named here so that the
// façades, which import the engine and not internal/webhooks (archcheck), answer them as they are.
type (
	WebhookEndpoint = webhooks.Endpoint
	WebhookDelivery = webhooks.Delivery
	WebhookAttempt  = webhooks.Attempt
	WebhookEvent    = webhooks.Event
)

// WebhookScope is whose endpoints, deliveries and events a use case sees: an installation's (plugin
// API), or an account's own (external API: InstallationID ""). Test is set for a test twin's (a
// test key's): what the scope's views show as livemode false.
type WebhookScope struct {
	AccountID, InstallationID string
	Test                      bool
}

// plugin reports whether the scope is an installation's, whose events are the plugin API's.
func (s WebhookScope) plugin() bool { return s.InstallationID != "" }

func (s WebhookScope) store() models.WebhookScope {
	return models.WebhookScope{AccountID: s.AccountID, InstallationID: s.InstallationID}
}

// EndpointInput is what a create or an update of an endpoint sets; nil is not given.
type EndpointInput struct {
	URL, Description, Status *string
	Events                   *[]string
}

// CreatedEndpoint is a new endpoint; Secret, its signing secret, is shown only here and only for an
// account's endpoint (an installation's signs with the installation's secret).
type CreatedEndpoint struct {
	webhooks.Endpoint
	Secret string
}

// CreateEndpoint creates an endpoint of the scope: url is required; events default to the API's
// default subscriptions; description defaults to "" and status to enabled. An account's endpoint
// gets its own secret, sealed at rest. KindInvalid names a bad field; KindConflict when the scope
// already has models.MaxWebhookEndpoints endpoints (nothing is created then).
func (e *Webhooks) CreateEndpoint(ctx context.Context, scope WebhookScope, in EndpointInput) (CreatedEndpoint, error) {
	if in.URL == nil {
		return CreatedEndpoint{}, refuse(KindInvalid, "", "url", "is required.")
	}
	changes, err := e.endpointChanges(scope, in)
	if err != nil {
		return CreatedEndpoint{}, err
	}
	ep := &models.WebhookEndpoint{AccountID: scope.AccountID, URL: *changes.URL, Status: models.EndpointEnabled}
	if scope.plugin() {
		inst := scope.InstallationID
		ep.InstallationID = &inst
		ep.Events = models.StringList(webhooks.DefaultPluginEvents)
	} else {
		ep.Events = models.StringList(webhooks.DefaultExternalEvents)
	}
	if changes.Events != nil {
		ep.Events = models.StringList(*changes.Events)
	}
	ep.Events = append(models.StringList{}, ep.Events...)
	if changes.Description != nil {
		ep.Description = *changes.Description
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	ep.CreatedAt = now
	if changes.Status != nil && *changes.Status == models.EndpointDisabled {
		ep.Status, ep.DisabledReason, ep.DisabledAt = models.EndpointDisabled, models.EndpointDisabledManually, &now
	}
	var secret string
	if !scope.plugin() {
		if e.cfg.Secrets == nil {
			return CreatedEndpoint{}, errors.New("engine: no Secrets sealer configured for account webhook endpoints")
		}
		secret = webhooks.NewSecret()
		ep.SecretEnc = e.cfg.Secrets.Seal(secret)
	}
	switch err := e.store.CreateWebhookEndpoint(ctx, ep); {
	case errors.Is(err, models.ErrEndpointLimit):
		return CreatedEndpoint{}, refuse(KindConflict, "", "",
			"%s has %d webhook endpoints, the most it may have; delete one before creating another.", scopeName(scope), models.MaxWebhookEndpoints)
	case errors.Is(err, models.ErrNotFound):
		return CreatedEndpoint{}, &Error{Kind: KindNotFound, Message: scopeName(scope) + " does not exist.", Cause: err}
	case err != nil:
		return CreatedEndpoint{}, err
	}
	return CreatedEndpoint{Endpoint: webhooks.EndpointOf(ep, !scope.Test), Secret: secret}, nil
}

// scopeName is how a refusal names the scope's owner.
func scopeName(scope WebhookScope) string {
	if scope.plugin() {
		return "The installation"
	}
	return "The account"
}

// endpointChanges checks the fields in sets and returns them as the store writes them: events
// without duplicates (first occurrence kept), each an event type of the scope's API.
func (e *Webhooks) endpointChanges(scope WebhookScope, in EndpointInput) (models.EndpointChanges, error) {
	var out models.EndpointChanges
	if in.URL != nil {
		u := *in.URL
		switch {
		case u == "":
			return out, refuse(KindInvalid, "", "url", "must not be empty.")
		case len(u) > MaxEndpointURLLength:
			return out, refuse(KindInvalid, "", "url", "must be at most %d characters.", MaxEndpointURLLength)
		}
		if err := webhooks.CheckCallbackURL(u, e.cfg.WebhookAllowPrivateNetworks); err != nil {
			var forbidden *webhooks.ForbiddenAddressError
			if errors.As(err, &forbidden) || strings.Contains(err.Error(), "loopback") {
				return out, refuse(KindInvalid, "", "url", "must not point to a loopback, private, link-local or otherwise internal address (%s).", u)
			}
			return out, refuse(KindInvalid, "", "url", "must be an absolute http or https URL with a host.")
		}
		out.URL = &u
	}
	if in.Events != nil {
		if len(*in.Events) == 0 {
			return out, refuse(KindInvalid, "", "events", "must name at least one event; omit it for the default events.")
		}
		events := make([]string, 0, len(*in.Events))
		for i, name := range *in.Events {
			if !webhooks.IsEvent(scope.plugin(), name) {
				return out, refuse(KindInvalid, "", fmt.Sprintf("events[%d]", i), "%q is not an event type; use one of: %s.",
					name, strings.Join(webhooks.EventsOf(scope.plugin()), ", "))
			}
			if !contains(events, name) {
				events = append(events, name)
			}
		}
		out.Events = &events
	}
	if in.Description != nil {
		if n := utf8.RuneCountInString(*in.Description); n > MaxEndpointDescriptionLength {
			return out, refuse(KindInvalid, "", "description", "must be at most %d characters (it has %d).", MaxEndpointDescriptionLength, n)
		}
		d := *in.Description
		out.Description = &d
	}
	if in.Status != nil {
		if *in.Status != models.EndpointEnabled && *in.Status != models.EndpointDisabled {
			return out, refuse(KindInvalid, "", "status", "must be %s or %s.", models.EndpointEnabled, models.EndpointDisabled)
		}
		s := *in.Status
		out.Status = &s
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// endpointNotFound is the refusal of an endpoint that is missing, deleted or another scope's.
func endpointNotFound() *Error {
	return refuse(KindNotFound, "", "", "No webhook endpoint with this ID.")
}

// ListEndpoints returns a page of the scope's endpoints, newest first, and the cursor of the next
// page ("" after the last). limit is 1 to MaxWebhookPageLimit (0: DefaultWebhookPageLimit); cursor
// is "" or a next cursor of this list. KindInvalid names limit or cursor.
func (e *Webhooks) ListEndpoints(ctx context.Context, scope WebhookScope, limit int, cursor string) ([]webhooks.Endpoint, string, error) {
	limit, after, err := webhookPage(limit, cursor)
	if err != nil {
		return nil, "", err
	}
	rows, err := e.store.WebhookEndpoints(ctx, scope.store(), after, limit+1)
	if err != nil {
		return nil, "", err
	}
	out, next := webhookPageOf(rows, limit, func(r *models.WebhookEndpoint) (webhooks.Endpoint, time.Time, string) {
		return webhooks.EndpointOf(r, !scope.Test), r.CreatedAt, r.ID
	})
	return out, next, nil
}

// GetEndpoint returns an endpoint of the scope; KindNotFound for a missing, deleted or another
// scope's one.
func (e *Webhooks) GetEndpoint(ctx context.Context, scope WebhookScope, id string) (webhooks.Endpoint, error) {
	ep, err := e.store.WebhookEndpoint(ctx, scope.store(), id)
	if errors.Is(err, models.ErrNotFound) {
		return webhooks.Endpoint{}, endpointNotFound()
	}
	if err != nil {
		return webhooks.Endpoint{}, err
	}
	return webhooks.EndpointOf(ep, !scope.Test), nil
}

// UpdateEndpoint changes the fields in sets of an endpoint of the scope (at least one: KindInvalid
// otherwise) and returns it. Enabling a disabled endpoint clears why and since when it was
// disabled and its failing window; disabling it records a manual disable. Its held deliveries stay
// held until a recover. KindNotFound for a missing, deleted or another scope's endpoint.
func (e *Webhooks) UpdateEndpoint(ctx context.Context, scope WebhookScope, id string, in EndpointInput) (webhooks.Endpoint, error) {
	if in.URL == nil && in.Events == nil && in.Description == nil && in.Status == nil {
		return webhooks.Endpoint{}, refuse(KindInvalid, "", "", "The body must set at least one of url, events, description and status.")
	}
	changes, err := e.endpointChanges(scope, in)
	if err != nil {
		return webhooks.Endpoint{}, err
	}
	ep, err := e.store.UpdateWebhookEndpoint(ctx, scope.store(), id, changes, time.Now())
	if errors.Is(err, models.ErrNotFound) {
		return webhooks.Endpoint{}, endpointNotFound()
	}
	if err != nil {
		return webhooks.Endpoint{}, err
	}
	return webhooks.EndpointOf(ep, !scope.Test), nil
}

// DeleteEndpoint deletes an endpoint of the scope: it receives nothing more and no longer counts
// towards the limit; its deliveries stay in the log, and those that had not ended (pending, held,
// delivering) end failed with models.EndpointDeletedError in the same transaction, since nothing
// could send them any more (models.Store.DeleteWebhookEndpoint). After the commit it cancels the
// workflows of those it ended that may still run (cancelDeliveryRuns), so none lingers until its
// next scheduled attempt; that is best effort and never fails the deletion. KindNotFound for a
// missing, deleted or another scope's one.
func (e *Webhooks) DeleteEndpoint(ctx context.Context, scope WebhookScope, id string) error {
	running, err := e.store.DeleteWebhookEndpoint(ctx, scope.store(), id, time.Now())
	if errors.Is(err, models.ErrNotFound) {
		return endpointNotFound()
	}
	if err != nil {
		return err
	}
	e.cancelDeliveryRuns(ctx, id, running)
	return nil
}

// RotateEndpointSecret gives an account's endpoint a new signing secret and keeps the previous one
// signing beside it for models.PreviousSecretGrace. An installation's endpoints sign with the
// installation's secret (rotate-hmac): KindInvalid in an installation's scope. KindNotFound for a
// missing, deleted or another account's endpoint.
func (e *Webhooks) RotateEndpointSecret(ctx context.Context, scope WebhookScope, id string) (RotatedSecret, error) {
	if scope.plugin() {
		return RotatedSecret{}, refuse(KindInvalid, "", "", "An installation's endpoints sign with the installation's secret; rotate it with POST /installations/{id}/rotate-hmac.")
	}
	if e.cfg.Secrets == nil {
		return RotatedSecret{}, errors.New("engine: no Secrets sealer configured for account webhook endpoints")
	}
	secret := webhooks.NewSecret()
	until, err := e.store.RotateEndpointSecret(ctx, e.cfg.Secrets, scope.store(), id, secret, time.Now())
	if errors.Is(err, models.ErrNotFound) {
		return RotatedSecret{}, endpointNotFound()
	}
	if err != nil {
		return RotatedSecret{}, err
	}
	return RotatedSecret{Secret: secret, PreviousSecretValidUntil: until}, nil
}

// ParseWebhookLimit reads the limit query parameter of a webhook list: an integer from 1 to
// MaxWebhookPageLimit; KindInvalid naming limit otherwise. Both APIs parse it so.
func ParseWebhookLimit(raw string) (int, error) {
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > MaxWebhookPageLimit {
		return 0, refuse(KindInvalid, "", "limit", "must be an integer from 1 to %d.", MaxWebhookPageLimit)
	}
	return n, nil
}

// ParseWebhookTime reads a date-time query parameter of a webhook list (created_after,
// created_before): RFC 3339; KindInvalid naming field otherwise.
func ParseWebhookTime(field, raw string) (*time.Time, error) {
	t, err := instant.Parse(raw)
	switch {
	case errors.Is(err, instant.ErrOutOfRange):
		return nil, refuse(KindInvalid, "", field, "%s.", instant.OutOfRangeText)
	case err != nil:
		return nil, refuse(KindInvalid, "", field, "must be an RFC 3339 date-time such as 2026-06-01T12:00:00Z%s.", instant.PlusHint(raw))
	}
	return &t, nil
}

// webhookPage checks a page request: the limit (0: the default) and the position the cursor names.
func webhookPage(limit int, cursor string) (int, *models.WebhookCursor, error) {
	if limit == 0 {
		limit = DefaultWebhookPageLimit
	}
	if limit < 1 || limit > MaxWebhookPageLimit {
		return 0, nil, refuse(KindInvalid, "", "limit", "must be an integer from 1 to %d.", MaxWebhookPageLimit)
	}
	if cursor == "" {
		return limit, nil, nil
	}
	after, ok := decodeWebhookCursor(cursor)
	if !ok {
		return 0, nil, refuse(KindInvalid, "", "cursor", "is not a next_cursor of this list; pass it back unchanged, or omit it to start from the newest.")
	}
	return limit, after, nil
}

// webhookCursorToken is the JSON inside a webhook list's cursor: the last item's position.
type webhookCursorToken struct {
	CreatedAt string `json:"t"`
	ID        string `json:"id"`
}

// encodeWebhookCursor is the opaque next_cursor after the item (createdAt, id): base64url of its
// position. It carries no secret: every list is scoped, so a cursor altered by hand only moves
// within the caller's own records.
func encodeWebhookCursor(createdAt time.Time, id string) string {
	data, _ := json.Marshal(webhookCursorToken{CreatedAt: createdAt.UTC().Format(time.RFC3339Nano), ID: id})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeWebhookCursor(raw string) (*models.WebhookCursor, bool) {
	if len(raw) > maxWebhookCursorLength {
		return nil, false
	}
	data, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return nil, false
	}
	var tok webhookCursorToken
	if err := json.Unmarshal(data, &tok); err != nil || !ids.IsUUID(tok.ID) {
		return nil, false
	}
	at, err := time.Parse(time.RFC3339Nano, tok.CreatedAt)
	if err != nil {
		return nil, false
	}
	return &models.WebhookCursor{CreatedAt: at.UTC(), ID: tok.ID}, true
}
