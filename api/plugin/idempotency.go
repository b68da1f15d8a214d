package plugin

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/charge"
	"github.com/shotflow/shotflow/api/idempotency"
	"github.com/shotflow/shotflow/internal/engine"
)

// Idempotency-Key on every mutating route (plugin.go mounts them with h.mutation): POST /jobs,
// /orders/{id}/clone (where the key is required), /assets/upload, /images, /packshots,
// /jobs/{id}/accept, /jobs/{id}/reject, /jobs/{id}/refresh-url, /installations/{id}/rotate-hmac,
// /webhooks/{delivery_id}/replay, /webhook-endpoints (and its /test and /recover), PATCH and
// DELETE /webhook-endpoints/{id}, DELETE /jobs/{id}, /products/{id_or_ref} and
// /packshots/{id_or_ref}. The mechanism is api/idempotency's, with the keys scoped per
// installation and its refusals in the plugin envelope (409 idempotency_conflict); api/openapi.yaml
// ("Idempotency") documents it for clients.
//
//   - Sessions (POST /jobs, clone) replay their 201 as 200, and record their answer inside the
//     transaction that creates their order (sessionRecord), so the order exists exactly when its
//     key names it, crash or not.
//   - The rotate-hmac answer carries the new webhook secret: it is recorded sealed (h.Secrets),
//     like the secret itself, and opened to be replayed.
//   - POST /jobs/batch does not take the header: each of its sessions is independent.
//
// The crash window of the other routes (api/idempotency): a retry after the lease runs the route
// again, and what that second run does is the route's own repeat behaviour: POST /images and
// /packshots find their external_refs and answer them `existing`; accept and reject set the same
// rating; refresh-url signs the same files; the DELETEs answer 404 (the record is gone) or 409
// job_not_cancelable (the job is cancelled); upload declares a second asset that expires unused; a
// webhook replay sends the delivery again with the same webhook-id, so receivers deduplicate it;
// rotate-hmac rotates once more (the secret the crash never showed becomes the previous one, still
// valid for 48 hours, and the answer shows the newest).

// HeaderIdempotencyKey is the request header that makes a mutation idempotent.
const HeaderIdempotencyKey = idempotency.Header

// MaxIdempotencyKeyLength is the longest Idempotency-Key accepted, in characters.
const MaxIdempotencyKeyLength = idempotency.MaxKeyLength

// idempotencyTiming is the timing of the plugin's keyed requests (tests change it).
var idempotencyTiming = idempotency.DefaultTiming

// keyRule is how a mutating route takes its Idempotency-Key.
type keyRule = idempotency.Rule

// The rules of the plugin routes.
var (
	keyOptional        = keyRule{}
	keySession         = keyRule{ReplayStatus: http.StatusOK}
	keyRequiredSession = keyRule{Required: true, ReplayStatus: http.StatusOK}
	keySealed          = keyRule{Sealed: true}
)

// keyed wraps the handler of a mutating route: without an Idempotency-Key it runs as it is; with
// one it runs at most once per installation and key, and its remembered answer is replayed
// (api/idempotency). takesBody says whether the route's body is part of the payload.
func (h *Handler) keyed(rule keyRule, takesBody bool, handler gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) { h.keys().Run(c, rule, takesBody, handler) }
}

// keys is the Idempotency-Key mechanism of the plugin API: keys scoped per installation, refusals
// in the plugin envelope.
func (h *Handler) keys() idempotency.Keys {
	return idempotency.Keys{
		Engine: h.Engine, Secrets: h.Secrets, Log: h.Log, Timing: idempotencyTiming,
		Scope: func(c *gin.Context) engine.KeyScope { return engine.InstallationKeyScope(caller(c).Installation.ID) },
		Invalid: func(c *gin.Context, message string) {
			h.Fail(c, http.StatusBadRequest, CodeInvalidInput, message)
		},
		Conflicted: func(c *gin.Context, _ idempotency.Conflict, message string) {
			h.Fail(c, http.StatusConflict, CodeIdempotencyConflict, message)
		},
		Internal: h.internal,
	}
}

// recorder is what a keyed session commits with (sessionRecord); nil for a session without a key.
type recorder = engine.SessionRecord

// sessionRecord is what a session commits with: under a key it records the session response as
// the key's answer (201, JSON) in the transaction that creates the order; nil without a key.
func sessionRecord(c *gin.Context) recorder {
	claim := idempotency.Claim(c)
	if claim == nil {
		return nil
	}
	return claim.SessionRecord(func(s engine.Session) (engine.Answer, error) {
		body, err := encodeJSON(sessionResponse(s))
		headers := charge.Headers(s.CreditsReserved, s.CreditsRemaining)
		headers.Set("Content-Type", jsonContentType)
		return engine.Answer{Status: http.StatusCreated, Headers: headers, Body: body}, err
	})
}
