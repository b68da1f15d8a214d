package engine

import (
	"net/url"
	"time"
)

// The query parameters of the webhook lists, read the same way for both APIs
// (GET /webhook-endpoints, /webhook-deliveries and /events): each may be given once; limit is
// 1–MaxWebhookPageLimit; cursor is a next_cursor; created_after and created_before are RFC 3339;
// a filter given empty is refused rather than read as "no filter". A refusal is KindInvalid naming
// the parameter.

// webhookList is a parsed list query: the page, the creation window and the filters by name.
type webhookList struct {
	limit         int
	cursor        string
	after, before *time.Time
	filters       map[string]string
}

// parseWebhookList reads the page parameters, and, for a list with filters, created_after,
// created_before and the filters named.
func parseWebhookList(query url.Values, filters ...string) (webhookList, error) {
	out := webhookList{filters: map[string]string{}}
	names := []string{"limit", "cursor"}
	if len(filters) > 0 {
		names = append(names, "created_after", "created_before")
	}
	names = append(names, filters...)
	for _, name := range names {
		if len(query[name]) > 1 {
			return out, refuse(KindInvalid, "", name, "may be given only once.")
		}
	}
	var err error
	if query.Has("limit") {
		if out.limit, err = ParseWebhookLimit(query.Get("limit")); err != nil {
			return out, err
		}
	}
	if query.Has("cursor") {
		if out.cursor = query.Get("cursor"); out.cursor == "" {
			return out, refuse(KindInvalid, "", "cursor", "must be the next_cursor of the previous page; leave it out for the first page.")
		}
	}
	if len(filters) == 0 {
		return out, nil
	}
	for _, p := range []struct {
		name string
		dst  **time.Time
	}{{"created_after", &out.after}, {"created_before", &out.before}} {
		if query.Has(p.name) {
			if *p.dst, err = ParseWebhookTime(p.name, query.Get(p.name)); err != nil {
				return out, err
			}
		}
	}
	for _, name := range filters {
		if query.Has(name) {
			if out.filters[name] = query.Get(name); out.filters[name] == "" {
				return out, refuse(KindInvalid, "", name, "must not be empty; leave it out not to filter by it.")
			}
		}
	}
	return out, nil
}

// EndpointListQuery reads the query of GET /webhook-endpoints: its limit and cursor.
func EndpointListQuery(query url.Values) (limit int, cursor string, err error) {
	q, err := parseWebhookList(query)
	return q.limit, q.cursor, err
}

// DeliveryListQuery reads the query of GET /webhook-deliveries: the page, the creation window and
// the filters endpoint_id, event, event_id and status.
func DeliveryListQuery(query url.Values) (DeliveryFilter, error) {
	q, err := parseWebhookList(query, "endpoint_id", "event", "event_id", "status")
	return DeliveryFilter{EndpointID: q.filters["endpoint_id"], Event: q.filters["event"], EventID: q.filters["event_id"],
		Status: q.filters["status"], CreatedAfter: q.after, CreatedBefore: q.before, Limit: q.limit, Cursor: q.cursor}, err
}

// EventListQuery reads the query of GET /events: the page, the creation window and the filter type.
func EventListQuery(query url.Values) (EventFilter, error) {
	q, err := parseWebhookList(query, "type")
	return EventFilter{Type: q.filters["type"], CreatedAfter: q.after, CreatedBefore: q.before, Limit: q.limit, Cursor: q.cursor}, err
}
