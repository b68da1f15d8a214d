package engine

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/shotflow/shotflow/models"
)

// TemporalUI is where the support use cases link workflows in the Temporal Web UI.
type TemporalUI struct {
	BaseURL   string // TEMPORAL_UI_URL, e.g. http://localhost:8233
	Namespace string // TEMPORAL_NAMESPACE; empty is "default"
}

// WorkflowURL is the UI page of the workflow with the given ID (it shows the latest run); empty
// when no UI is configured.
func (u TemporalUI) WorkflowURL(workflowID string) string {
	if u.BaseURL == "" {
		return ""
	}
	ns := u.Namespace
	if ns == "" {
		ns = "default"
	}
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s", strings.TrimRight(u.BaseURL, "/"), url.PathEscape(ns), url.PathEscape(workflowID))
}

// workflowURL is the Temporal UI page of the workflow with the given ID, as configured.
func (e *Support) workflowURL(workflowID string) string {
	return e.cfg.TemporalUI.WorkflowURL(workflowID)
}

// missing is the KindNotFound refusal of an operator's use case (Support, and the Accounts ones
// of `shotflow admin`): the record looked for does not exist. It is models.ErrNotFound for
// errors.Is, and its message is what the admin commands print.
func missing(what, id string) *Error {
	return &Error{Kind: KindNotFound, Message: fmt.Sprintf("%s %s does not exist", what, id), Cause: models.ErrNotFound}
}

// utc is t in UTC, or nil.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// CanonicalID is an ID as the store keeps it: a UUID in lower case, anything else as given. A
// support command may be given an ID copied from anywhere (a Temporal UI link, a client's
// e-mail in capitals); the API's edge does the same for path parameters.
func CanonicalID(id string) string { return models.CanonicalID(strings.TrimSpace(id)) }
