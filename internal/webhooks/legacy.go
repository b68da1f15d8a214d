package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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

// livemodeRecords are the objects nested in a body that carry livemode like the body does: the
// order of order.completed, the record of record.done and record.failed, the endpoint of
// endpoint.disabled.
var livemodeRecords = []string{"order", "record", "endpoint"}

// CurrentPayload returns the body to send for a stored payload. A payload of the current shape is
// returned as it is. One recorded in an earlier shape is rewritten in the current shape with the
// same values (the same job, URLs, delivery ID, event and creation time), so retries and replays
// of deliveries recorded before a change reach receivers in the one shape the documentation
// describes; the stored row is left as it is. The earlier shapes: the job under "data"; a body
// without livemode (recorded before it existed), which gets the livemode of its scope, asked of
// livemode only then, at the top level and on its nested order, record or endpoint.
func CurrentPayload(stored []byte, livemode func() (bool, error)) ([]byte, error) {
	var legacy legacyPayload
	if err := json.Unmarshal(stored, &legacy); err != nil {
		return nil, fmt.Errorf("webhooks: stored payload is not a JSON object: %w", err)
	}
	fields, err := objectFields(stored)
	if err != nil {
		return nil, fmt.Errorf("webhooks: stored payload is not a JSON object: %w", err)
	}
	if legacy.Data == nil && hasField(fields, "livemode") {
		return stored, nil
	}
	mode, err := livemode()
	if err != nil {
		return nil, fmt.Errorf("webhooks: livemode of a stored payload: %w", err)
	}
	if legacy.Data != nil {
		legacy.Data.Livemode = mode
		return encode(Payload{
			Event: legacy.Type, DeliveryID: legacy.ID, DeliveryCreatedAt: legacy.CreatedAt.UTC(), Job: *legacy.Data,
		})
	}
	for i, f := range fields {
		for _, name := range livemodeRecords {
			if f.key != name {
				continue
			}
			if nested, err := objectFields(f.value); err == nil && !hasField(nested, "livemode") {
				fields[i].value = withField(nested, "livemode", mode)
			}
		}
	}
	return withField(fields, "livemode", mode), nil
}

// field is one member of a JSON object, its value as it was written.
type field struct {
	key   string
	value json.RawMessage
}

// objectFields are the members of the JSON object body, in their order.
func objectFields(body []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, err
		}
		out = append(out, field{key, value})
	}
	return out, nil
}

func hasField(fields []field, key string) bool {
	for _, f := range fields {
		if f.key == key {
			return true
		}
	}
	return false
}

// withField is the object of fields with key set to the boolean v after them, compact.
func withField(fields []field, key string, v bool) json.RawMessage {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for _, f := range fields {
		k, _ := json.Marshal(f.key)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(f.value)
		buf.WriteByte(',')
	}
	k, _ := json.Marshal(key)
	buf.Write(k)
	buf.WriteString(":" + strconv.FormatBool(v) + "}")
	return buf.Bytes()
}
