package webhooks

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/shotflow/shotflow/internal/jobview"
)

// legacyPayload is the body of a delivery recorded before the job's fields moved to the top
// level: the job under "data", the delivery ID as "id" and the event as "type".
type legacyPayload struct {
	ID        string       `json:"id"`
	Type      string       `json:"type"`
	CreatedAt time.Time    `json:"created_at"`
	Data      *jobview.Job `json:"data"`
}

// CurrentPayload returns the body to send for a stored payload. A payload of the current shape is
// returned as it is. One recorded in the earlier shape, with the job under "data", is rewritten in
// the current shape with the same values (the same job, URLs, delivery ID, event and creation
// time), so retries and replays of deliveries recorded before the change reach receivers in the
// one shape the documentation describes. The stored row is left as it is.
func CurrentPayload(stored []byte) ([]byte, error) {
	var legacy legacyPayload
	if err := json.Unmarshal(stored, &legacy); err != nil {
		return nil, fmt.Errorf("webhooks: stored payload is not a JSON object: %w", err)
	}
	if legacy.Data == nil {
		return stored, nil
	}
	return encode(Payload{
		Event: legacy.Type, DeliveryID: legacy.ID, DeliveryCreatedAt: legacy.CreatedAt.UTC(), Job: *legacy.Data,
	})
}
