package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/ids"
	"github.com/shotflow/shotflow/workflows"
)

// SupportReplayResult answers Support.ReplayWebhook.
type SupportReplayResult struct {
	DeliveryID    string `json:"delivery_id"`
	WorkflowID    string `json:"workflow_id"`
	TemporalUIURL string `json:"temporal_ui_url"`
	Status        string `json:"status"` // always "queued": the new run's first attempt is under way
}

// ReplayWebhook re-sends a delivery of any installation now (Webhooks.StartWebhookReplay); an
// unknown delivery is KindNotFound, one whose endpoint was deleted or is disabled, or that has no
// endpoint, KindConflict, as the API's replay answers (also when the endpoint is deleted between
// the check and the queueing), and a replay that could not be queued or started KindUnavailable
// (replayStartRefusal). deliveryID
// may also be the ID of an event (the webhook-id a receiver got, which a merchant reports) that
// has one delivery; of one with several, KindConflict names them.
func (e *Support) ReplayWebhook(ctx context.Context, deliveryID string) (SupportReplayResult, error) {
	d, err := e.replayTarget(ctx, deliveryID)
	if err != nil {
		return SupportReplayResult{}, err
	}
	if err := e.app.Webhooks.StartWebhookReplay(ctx, d); err != nil {
		// The APIs' answer, then for the operator what the database or Temporal said.
		return SupportReplayResult{}, fmt.Errorf("%w (delivery %s: %v)", replayStartRefusal(err), d.ID, err)
	}
	id := workflows.WebhookWorkflowID(d.ID)
	return SupportReplayResult{DeliveryID: d.ID, WorkflowID: id, TemporalUIURL: e.workflowURL(id), Status: "queued"}, nil
}

// CheckWebhookReplay refuses what ReplayWebhook would refuse for deliveryID, without reaching
// Temporal: `shotflow admin webhooks replay` tells a delivery that cannot be replayed before it
// dials Temporal. ReplayWebhook checks again.
func (e *Support) CheckWebhookReplay(ctx context.Context, deliveryID string) error {
	_, err := e.replayTarget(ctx, deliveryID)
	return err
}

// replayTarget is the delivery a replay of deliveryID (a delivery's ID, or an event's with one
// delivery) sends, once its endpoint is known to be able to receive it (Webhooks.replayable).
func (e *Support) replayTarget(ctx context.Context, deliveryID string) (*models.WebhookDelivery, error) {
	d, err := e.store.GetWebhookDelivery(ctx, deliveryID)
	if errors.Is(err, models.ErrNotFound) {
		d, err = e.deliveryOfEvent(ctx, deliveryID)
	}
	if errors.Is(err, models.ErrNotFound) {
		return nil, missing("webhook delivery or event", deliveryID)
	}
	if err != nil {
		return nil, err
	}
	if err := e.app.Webhooks.replayable(ctx, d); err != nil {
		return nil, err
	}
	return d, nil
}

// deliveryOfEvent is the one delivery of the event eventID: ErrNotFound when it has none,
// KindConflict naming them when it has several.
func (e *Support) deliveryOfEvent(ctx context.Context, eventID string) (*models.WebhookDelivery, error) {
	ds, err := e.store.DeliveriesOfEvent(ctx, eventID)
	switch {
	case err != nil:
		return nil, err
	case len(ds) == 0:
		return nil, models.ErrNotFound
	case len(ds) > 1:
		ids := make([]string, len(ds))
		for i := range ds {
			ids[i] = ds[i].ID
		}
		return nil, refuse(KindConflict, "", "", "event %s went to %d endpoints; replay one of its deliveries: %s", eventID, len(ds), strings.Join(ids, ", "))
	}
	return &ds[0], nil
}

// SupportWebhookScope is whose webhooks a support answer shows: an installation's (plugin API),
// or an account's own (external API, InstallationID nil).
type SupportWebhookScope struct {
	AccountID      string  `json:"account_id"`
	InstallationID *string `json:"installation_id"`
}

func supportScopeOf(s WebhookScope) SupportWebhookScope {
	out := SupportWebhookScope{AccountID: s.AccountID}
	if s.InstallationID != "" {
		id := s.InstallationID
		out.InstallationID = &id
	}
	return out
}

// namedWebhookScope finds the scope an operator names, and its world: an installation
// (installationID), or an account's own endpoints (accountID); exactly one of the two. An unknown
// one is KindNotFound.
func (e *Support) namedWebhookScope(ctx context.Context, installationID, accountID string) (WebhookScope, error) {
	switch {
	case installationID != "" && accountID != "":
		return WebhookScope{}, refuse(KindInvalid, "", "installation", "give an installation or an account, not both (an account's own endpoints are those of the external API).")
	case installationID != "":
		inst, err := e.store.GetInstallation(ctx, installationID)
		if errors.Is(err, models.ErrNotFound) {
			return WebhookScope{}, missing("installation", installationID)
		}
		if err != nil {
			return WebhookScope{}, err
		}
		return WebhookScope{AccountID: inst.AccountID, InstallationID: inst.ID, Test: inst.TestMode}, nil
	case accountID != "":
		acc, err := e.store.GetAccount(ctx, accountID)
		if errors.Is(err, models.ErrNotFound) {
			return WebhookScope{}, missing("account", accountID)
		}
		if err != nil {
			return WebhookScope{}, err
		}
		return WebhookScope{AccountID: acc.ID, Test: acc.TestMode}, nil
	}
	return WebhookScope{}, refuse(KindInvalid, "", "installation", "give an installation or an account.")
}

// scopesIn are the scopes of the named one's worlds that mode shows, live first: the named scope
// and, for a live one, its test twin's when it has one (a test key was issued for it). A test
// twin named by its own ID has no live world.
func (e *Support) scopesIn(ctx context.Context, named WebhookScope, mode Mode) ([]WebhookScope, error) {
	var out []WebhookScope
	if mode.includes(named.Test) {
		out = append(out, named)
	}
	if named.Test || !mode.includes(true) {
		return out, nil
	}
	var twin WebhookScope
	if named.InstallationID != "" {
		inst, err := e.store.FindTestTwinOfInstallation(ctx, named.InstallationID)
		if errors.Is(err, models.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		twin = WebhookScope{AccountID: inst.AccountID, InstallationID: inst.ID, Test: true}
	} else {
		acc, err := e.store.FindTestTwinOfAccount(ctx, named.AccountID)
		if errors.Is(err, models.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		twin = WebhookScope{AccountID: acc.ID, Test: true}
	}
	return append(out, twin), nil
}

// endpointScope finds a live endpoint of any installation or account by ID, and its scope, whose
// Test says its world; an unknown or deleted one is KindNotFound.
func (e *Support) endpointScope(ctx context.Context, endpointID string) (*models.WebhookEndpoint, WebhookScope, error) {
	if !ids.IsUUID(endpointID) {
		return nil, WebhookScope{}, missing("webhook endpoint", endpointID)
	}
	ep, err := e.store.AnyWebhookEndpoint(ctx, ids.Canonical(endpointID))
	if errors.Is(err, models.ErrNotFound) {
		return nil, WebhookScope{}, missing("webhook endpoint", endpointID)
	}
	if err != nil {
		return nil, WebhookScope{}, err
	}
	acc, err := e.store.GetAccount(ctx, ep.AccountID)
	if err != nil {
		return nil, WebhookScope{}, err
	}
	scope := WebhookScope{AccountID: ep.AccountID, Test: acc.TestMode}
	if ep.InstallationID != nil {
		scope.InstallationID = *ep.InstallationID
	}
	return ep, scope, nil
}

// supportTestScope is the test twin's scope among scopes when it is not the named one itself; nil
// when there is none.
func supportTestScope(named WebhookScope, scopes []WebhookScope) *SupportWebhookScope {
	for _, s := range scopes {
		if s.Test && s != named {
			out := supportScopeOf(s)
			return &out
		}
	}
	return nil
}

// SupportEndpoint is a webhook endpoint as the APIs show it, and the world it belongs to.
type SupportEndpoint struct {
	webhooks.Endpoint
	Livemode bool `json:"livemode"` // false for a test twin's endpoint (made with a test key)
}

// SupportEndpointList answers Support.ListWebhookEndpoints.
type SupportEndpointList struct {
	SupportWebhookScope
	// TestScope is the named installation's or account's test twin, whose endpoints are the test
	// ones listed; nil when it has none or the mode shows live endpoints alone.
	TestScope *SupportWebhookScope `json:"test_scope,omitempty"`
	Endpoints []SupportEndpoint    `json:"webhook_endpoints"`
}

// ListWebhookEndpoints returns every live webhook endpoint of an installation (installationID) or
// of an account's own, external API (accountID), newest first, as the APIs show them: with status,
// disabled_reason, disabled_at and failing_since; with those of its test twin after them as mode
// says ("" or ModeAll both worlds, ModeLive the named one's alone, ModeTest its twin's). Exactly
// one of the two is given (KindInvalid otherwise); an unknown one is KindNotFound.
func (e *Support) ListWebhookEndpoints(ctx context.Context, installationID, accountID string, mode Mode) (SupportEndpointList, error) {
	if !mode.valid() {
		return SupportEndpointList{}, refuse(KindInvalid, "", "mode", "must be one of: %s.", strings.Join(Modes, ", "))
	}
	named, err := e.namedWebhookScope(ctx, installationID, accountID)
	if err != nil {
		return SupportEndpointList{}, err
	}
	scopes, err := e.scopesIn(ctx, named, mode)
	if err != nil {
		return SupportEndpointList{}, err
	}
	out := SupportEndpointList{SupportWebhookScope: supportScopeOf(named), TestScope: supportTestScope(named, scopes),
		Endpoints: []SupportEndpoint{}}
	for _, scope := range scopes {
		cursor := ""
		for {
			page, next, err := e.app.Webhooks.ListEndpoints(ctx, scope, MaxWebhookPageLimit, cursor)
			if err != nil {
				return SupportEndpointList{}, err
			}
			for _, ep := range page {
				out.Endpoints = append(out.Endpoints, SupportEndpoint{Endpoint: ep, Livemode: !scope.Test})
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
	return out, nil
}

// SupportDeliveryFilter selects the deliveries Support.ListWebhookDeliveries returns: of an
// installation, of an account's own endpoints, or of one endpoint (whose scope it is when neither
// is given); the other fields filter as GET /webhook-deliveries does ("" does not filter).
type SupportDeliveryFilter struct {
	InstallationID, AccountID string
	EndpointID, Event, Status string
	Mode                      Mode   // the worlds of the installation or account ("": DefaultMode)
	Limit                     int    // 0: DefaultWebhookPageLimit; at most MaxWebhookPageLimit
	Cursor                    string // the next_cursor of the previous page
}

// SupportDelivery is a delivery as the APIs show it, which says its world (Livemode: false for a
// delivery of a test twin's event).
type SupportDelivery = WebhookDelivery

// SupportDeliveryList answers Support.ListWebhookDeliveries.
type SupportDeliveryList struct {
	SupportWebhookScope
	// TestScope is the test twin whose deliveries are listed beside the named scope's; nil when it
	// has none, the mode shows live deliveries alone or an endpoint narrows the list to one scope.
	TestScope  *SupportWebhookScope `json:"test_scope,omitempty"`
	Deliveries []SupportDelivery    `json:"webhook_deliveries"`
	NextCursor *string              `json:"next_cursor"` // nil after the last page
}

// ListWebhookDeliveries returns a page of the delivery log, newest first, each delivery with every
// attempt, over the same use case as GET /webhook-deliveries. The scope is the installation, the
// account's own endpoints, or the endpoint's when only EndpointID is given; the named
// installation's or account's test twin's deliveries are merged in by time as Mode says (an
// endpoint belongs to one world: the mode may only exclude it). An endpoint outside the scopes also
// given is KindInvalid naming endpoint_id, an unknown installation, account or endpoint
// KindNotFound. Bad filters are KindInvalid naming them as the API does (event, status, limit,
// cursor), and mode.
func (e *Support) ListWebhookDeliveries(ctx context.Context, f SupportDeliveryFilter) (SupportDeliveryList, error) {
	if !f.Mode.valid() {
		return SupportDeliveryList{}, refuse(KindInvalid, "", "mode", "must be one of: %s.", strings.Join(Modes, ", "))
	}
	var named WebhookScope
	var scopes []WebhookScope
	endpointID := f.EndpointID
	if f.InstallationID != "" || f.AccountID != "" || f.EndpointID == "" {
		var err error
		if named, err = e.namedWebhookScope(ctx, f.InstallationID, f.AccountID); err != nil {
			return SupportDeliveryList{}, err
		}
		if scopes, err = e.scopesIn(ctx, named, f.Mode); err != nil {
			return SupportDeliveryList{}, err
		}
	}
	if f.EndpointID != "" {
		ep, own, err := e.endpointScope(ctx, f.EndpointID)
		if err != nil {
			return SupportDeliveryList{}, err
		}
		if named != (WebhookScope{}) {
			worlds, err := e.scopesIn(ctx, named, ModeAll)
			if err != nil {
				return SupportDeliveryList{}, err
			}
			if !slices.Contains(worlds, own) {
				return SupportDeliveryList{}, refuse(KindInvalid, "", "endpoint_id", "webhook endpoint %s is not one of %s.", f.EndpointID, scopeLabel(named))
			}
		}
		named, scopes, endpointID = own, nil, ep.ID
		if f.Mode.includes(own.Test) {
			scopes = []WebhookScope{own}
		}
	}
	filter := DeliveryFilter{EndpointID: endpointID, Event: f.Event, Status: f.Status, Limit: f.Limit, Cursor: f.Cursor}
	out := SupportDeliveryList{SupportWebhookScope: supportScopeOf(named), TestScope: supportTestScope(named, scopes),
		Deliveries: []SupportDelivery{}}
	if len(scopes) == 0 {
		// The mode excludes every scope: the filters are still checked, on the named one.
		_, _, err := e.app.Webhooks.ListDeliveries(ctx, named, filter)
		return out, err
	}
	more := false
	for _, scope := range scopes {
		page, next, err := e.app.Webhooks.ListDeliveries(ctx, scope, filter)
		if err != nil {
			return SupportDeliveryList{}, err
		}
		out.Deliveries = append(out.Deliveries, page...)
		more = more || next != ""
	}
	// Each scope's page is its newest behind the cursor, in the lists' (created_at DESC, id DESC)
	// order: the first limit of their union are the union's page, and its last one is where every
	// scope goes on from.
	slices.SortFunc(out.Deliveries, func(a, b SupportDelivery) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	})
	if limit := cmp.Or(f.Limit, DefaultWebhookPageLimit); len(out.Deliveries) > limit {
		out.Deliveries, more = out.Deliveries[:limit], true
	}
	if more {
		last := out.Deliveries[len(out.Deliveries)-1]
		next := encodeWebhookCursor(last.CreatedAt, last.ID)
		out.NextCursor = &next
	}
	return out, nil
}

// scopeLabel names a scope in an operator's message.
func scopeLabel(s WebhookScope) string {
	if s.InstallationID != "" {
		return "installation " + s.InstallationID
	}
	return "account " + s.AccountID + "'s own endpoints"
}

// SupportRecoverResult answers Support.RecoverWebhookEndpoint.
type SupportRecoverResult struct {
	SupportWebhookScope
	EndpointID       string `json:"endpoint_id"`
	DeliveriesQueued int    `json:"deliveries_queued"`
	// Status is "started" when every queued delivery's workflow has started, "queued" when some
	// are left to the workers' outbox sweep (Temporal did not take them now), "none" when nothing
	// in the window ended failed or is held.
	Status string `json:"status"`
}

// RecoverWebhookEndpoint re-sends every delivery of an endpoint of any installation or account
// created in [since, until) (until nil: now) that ended failed or is held, over the same use case
// as POST /webhook-endpoints/{id}/recover and with its refusals: since more than 14 days back or
// until not after since is KindInvalid naming it, a disabled endpoint or a recover still queueing
// is KindConflict, an unknown endpoint KindNotFound. It starts the queued deliveries before it
// returns, so the command's process does not leave them to the sweep.
func (e *Support) RecoverWebhookEndpoint(ctx context.Context, endpointID string, since time.Time, until *time.Time) (SupportRecoverResult, error) {
	ep, scope, err := e.endpointScope(ctx, endpointID)
	if err != nil {
		return SupportRecoverResult{}, err
	}
	n, err := e.app.Webhooks.RecoverEndpoint(ctx, scope, ep.ID, since, until)
	if err != nil {
		return SupportRecoverResult{}, err
	}
	out := SupportRecoverResult{SupportWebhookScope: supportScopeOf(scope), EndpointID: ep.ID, DeliveriesQueued: n, Status: "none"}
	if n == 0 {
		return out, nil
	}
	// RecoverEndpoint starts them in the background, which ends with this process: start them
	// here too (a duplicate start is a no-op) and say whether any is left to the sweep.
	e.app.Webhooks.startRecovered(ctx, ep.ID)
	owed, err := e.store.DeliveriesOwedStart(ctx, ep.ID, 1)
	if err != nil {
		return SupportRecoverResult{}, err
	}
	out.Status = "started"
	if len(owed) > 0 {
		out.Status = "queued"
	}
	return out, nil
}
