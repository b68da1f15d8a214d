package external

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/charge"
	"github.com/shotflow/shotflow/api/idempotency"
	"github.com/shotflow/shotflow/internal/engine"
)

// Idempotency-Key on every POST route (Register mounts each with keyed): the register-* routes,
// POST /products, /presets, /packshots/update-packshot, /image-picker/review, /webhook-endpoints
// and its /rotate-secret, /test and /recover, and /webhook-deliveries/{id}/replay (a repeat with
// the key answers the first 202, the delivery as it was then, and sends nothing). The mechanism is api/idempotency's, with the keys
// scoped per team account (the key's account: two accounts may use the same key independently)
// and its refusals in the external error body; api/external/openapi.yaml ("Idempotency")
// documents it for clients.
//
//   - A register-* route records its answer inside the transaction that creates its order
//     (generationRecord, engine.KeyClaim.SubmittedRecord), so the order exists exactly when its
//     key names it, crash or not. It answers 200, and so does its replay (the plugin's sessions,
//     which answer 201, replay 200 too).
//   - POST /webhook-endpoints and /webhook-endpoints/{id}/rotate-secret answer the endpoint's
//     signing secret: their answers are recorded sealed (h.Secrets), like the secret itself.
//   - The same key with a different request answers 409 with
//     errors.idempotencyConflict.details [different_request]; a repeat while the first request
//     still runs past the wait answers 409 with [in_progress] and Retry-After: 1.
//   - Other methods ignore the header: PUT /presets and PATCH /webhook-endpoints/{id} set what
//     they are sent, DELETE /orders/{id} and /webhook-endpoints/{id} end in the same state.
//
// The crash window of the routes that record their answer after their effect (api/idempotency):
// a retry after the lease runs the route again, and what that second run does is the route's own
// repeat behaviour: POST /products and /presets store a second product photo or preset, the
// reviews set the same verdict, a test send, a recover or a replay sends again (receivers
// deduplicate on webhook-id), POST /webhook-endpoints creates a second endpoint, and rotate-secret rotates once
// more (the secret the crash never showed becomes the previous one, valid for 48 hours).

// idempotencyTiming is the timing of the external API's keyed requests (tests change it).
var idempotencyTiming = idempotency.DefaultTiming

// keyRules are the POST routes whose key is not taken the default way (optional, replayed with
// the first answer's status).
var keyRules = map[string]idempotency.Rule{
	"/models/register-ideas":               keyGeneration,
	"/sceneries/register-ideas":            keyGeneration,
	"/packshots/register-ideas":            keyGeneration,
	"/image-picker/register-ideas":         keyGeneration,
	"/video-picker/register-videos":        keyGeneration,
	"/reel/register-reel":                  keyGeneration,
	"/webhook-endpoints":                   keySealed,
	"/webhook-endpoints/:id/rotate-secret": keySealed,
}

var (
	// keyGeneration: a generation request creates its order once and replays 200.
	keyGeneration = idempotency.Rule{ReplayStatus: http.StatusOK}
	// keySealed: the answer shows a signing secret.
	keySealed = idempotency.Rule{Sealed: true}
)

// Details of errors.idempotencyConflict.
const (
	detailDifferentRequest = "different_request"
	detailInProgress       = "in_progress"
)

// keyed wraps the handler of the POST route at path: without an Idempotency-Key it runs as it is;
// with one it runs at most once per account and key, and its remembered answer is replayed.
// takesBody says whether the route's body is part of the payload.
func (h *Handler) keyed(path string, takesBody bool, handler gin.HandlerFunc) gin.HandlerFunc {
	rule := keyRules[path]
	return func(c *gin.Context) { h.keys().Run(c, rule, takesBody, handler) }
}

// keys is the Idempotency-Key mechanism of the external API: keys scoped per team account,
// refusals in the external error body.
func (h *Handler) keys() idempotency.Keys {
	return idempotency.Keys{
		Engine: h.Engine, Secrets: h.Secrets, Log: h.Log, Timing: idempotencyTiming,
		Scope:   func(c *gin.Context) engine.KeyScope { return engine.AccountKeyScope(key(c).AccountID) },
		Invalid: func(c *gin.Context, message string) { h.fail(c, http.StatusBadRequest, message) },
		Conflicted: func(c *gin.Context, why idempotency.Conflict, message string) {
			detail := detailDifferentRequest
			if why == idempotency.ConflictBusy {
				detail = detailInProgress
			}
			c.AbortWithStatusJSON(http.StatusConflict, gin.H{"error": message,
				"errors": gin.H{"idempotencyConflict": gin.H{"details": []string{detail}}}})
		},
		Internal: h.internal,
	}
}

// generationRecord is what a generation request commits with: under a key it records the
// generation response as the key's answer (200, JSON) in the transaction that creates the order;
// nil without a key.
func generationRecord(c *gin.Context) engine.SubmittedRecord {
	claim := idempotency.Claim(c)
	if claim == nil {
		return nil
	}
	return claim.SubmittedRecord(func(s engine.Submitted) (engine.Answer, error) {
		answer, err := idempotency.JSONAnswer(http.StatusOK, generationResponse(s))
		for k, v := range charge.Headers(s.CreditsReserved, s.CreditsRemaining) {
			answer.Headers[k] = v
		}
		return answer, err
	})
}
