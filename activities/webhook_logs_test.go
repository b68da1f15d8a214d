package activities_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// TestWebhookLogsNeverCarryTheEndpointsCredentials: an endpoint URL may carry HTTP basic
// credentials (https://user:password@host/hook is accepted by CheckCallbackURL, and is a common
// way for receivers to authenticate webhooks). The worker's log lines about the endpoint (a failed
// attempt, the endpoint disabled) must not write that password into the operator's logs.
func TestWebhookLogsNeverCarryTheEndpointsCredentials(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		rc := newReceiver(t, answerWith(http.StatusInternalServerError))
		const password = "S3cretHookPassw0rd"
		withCreds := strings.Replace(rc.URL, "http://", "http://hookuser:"+password+"@", 1) + "/hooks"
		f := newFixture(t, db, withCreds)
		core, logs := observer.New(zapcore.DebugLevel)
		f.acts.Log = zap.New(core)
		f.acts.DisableAfter = time.Minute
		id := f.record(t, f.job.ID).DeliveryID

		f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1, NextDelay: time.Second})
		db.Model(&models.WebhookEndpoint{}).Where("id = ?", f.endpoint.ID).Update("failing_since", time.Now().UTC().Add(-time.Hour))
		f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 2, NextDelay: time.Second})

		if logs.FilterMessageSnippet("disabled").Len() == 0 {
			t.Fatalf("the endpoint was not disabled; lines: %v", logs.All())
		}
		for _, e := range logs.All() {
			if text := e.Message + fmt.Sprint(e.ContextMap()); strings.Contains(text, password) {
				t.Errorf("%s line %q carries the endpoint's password: %v", e.Level, e.Message, e.ContextMap())
			}
		}
	})
}
