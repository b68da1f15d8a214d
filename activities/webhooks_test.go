package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/metrics/metricstest"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// request is one webhook a receiver got.
type request struct {
	header http.Header
	body   []byte
}

// receiver is an httptest server answering with respond and recording every request.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []request
	respond  func(w http.ResponseWriter, n int) // n: 1 for the first request
}

func newReceiver(t *testing.T, respond func(w http.ResponseWriter, n int)) *receiver {
	t.Helper()
	rc := &receiver{respond: respond}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.requests = append(rc.requests, request{header: r.Header.Clone(), body: b})
		n := len(rc.requests)
		rc.mu.Unlock()
		rc.respond(w, n)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) got() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.requests...)
}

func answerWith(code int) func(http.ResponseWriter, int) {
	return func(w http.ResponseWriter, _ int) { w.WriteHeader(code) }
}

// fixture is an installation with a callback URL (its first endpoint) and a completed job with
// one output.
type fixture struct {
	db       *gorm.DB
	acts     *activities.Activities
	box      *secrets.Box
	inst     models.Installation
	endpoint models.WebhookEndpoint // the callback URL's
	secret   string
	job      models.Job
	starter  *starter
}

// starter is the activities' DeliveryStarter: it keeps what it was asked to start.
type starter struct {
	mu   sync.Mutex
	owed []models.WebhookDelivery
}

func (s *starter) StartOwedDeliveries(_ context.Context, owed []models.WebhookDelivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owed = append(s.owed, owed...)
}

// take returns and forgets what the starter was asked to start.
func (s *starter) take() []models.WebhookDelivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.owed
	s.owed = nil
	return out
}

func newFixture(t *testing.T, db *gorm.DB, callbackURL string) *fixture {
	t.Helper()
	box, err := secrets.NewBox([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{db: db, box: box, secret: webhooks.NewSecret(), starter: &starter{}}
	f.acts = &activities.Activities{Deliveries: f.starter,
		Store: models.NewStore(db), Log: zap.NewNop(), Secrets: box, DownloadTTL: 168 * time.Hour,
		Signer:   urlsign.New([]byte("0123456789abcdef0123456789abcdef"), "http://api.example"),
		Webhooks: webhooks.NewClient(webhooks.ClientOptions{AllowPrivate: true, Timeout: 300 * time.Millisecond}),
		Metrics:  metrics.New(),
	}
	t.Cleanup(func() { _ = f.acts.Metrics.Close() })
	acc, err := models.CreateAccount(db, "Acme", 10)
	if err != nil {
		t.Fatal(err)
	}
	created, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: "shop", CallbackURL: callbackURL}, f.secret)
	if err != nil {
		t.Fatal(err)
	}
	f.inst = created.Installation
	if callbackURL != "" {
		if err := db.Where("installation_id = ?", f.inst.ID).Take(&f.endpoint).Error; err != nil {
			t.Fatalf("the callback URL's endpoint: %v", err)
		}
	}
	f.job = f.newJob(t, &f.inst.ID, status.JobCompleted)
	now := time.Now().UTC()
	out := models.Asset{ID: models.OutputAssetID(f.job.ID, 1, 0), AccountID: acc.ID, InstallationID: &f.inst.ID, Kind: models.AssetKindOutput,
		Status: status.AssetReady, ContentType: "image/png", BlobKey: "k", Width: 4, Height: 5, SizeBytes: 9, JobID: &f.job.ID,
		CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&out).Error; err != nil {
		t.Fatal(err)
	}
	return f
}

// newJob creates an order with one job in the given status.
func (f *fixture) newJob(t *testing.T, installationID *string, st string) models.Job {
	t.Helper()
	now := time.Now().UTC()
	order := models.Order{ID: models.NewID(), AccountID: f.inst.AccountID, InstallationID: installationID, API: models.APIPlugin,
		JobType: jobtype.PhotoShoot, SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 1,
		CreatedAt: now, UpdatedAt: now}
	job := models.Job{ID: models.NewID(), OrderID: order.ID, AccountID: f.inst.AccountID, InstallationID: installationID,
		JobType: jobtype.PhotoShoot, ProductRef: "mug-01", ProductLabel: "Red mug", AIModel: "local/studio-v1",
		AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: st, AttemptCount: 1, Voting: models.VotingPending,
		CreatedAt: now, UpdatedAt: now}
	if err := f.db.Create(&order).Error; err != nil {
		t.Fatal(err)
	}
	if err := f.db.Create(&job).Error; err != nil {
		t.Fatal(err)
	}
	return job
}

// recorded is the job event a RecordJobWebhook recorded and its delivery to the fixture's
// endpoint ("" when there is none).
type recorded struct{ DeliveryID, EventID string }

// record runs RecordJobWebhook for the job's first run: its result never asks the workflow to
// start anything, and the deliveries it recorded were handed to the starter.
func (f *fixture) record(t *testing.T, jobID string) recorded {
	t.Helper()
	res, err := f.acts.RecordJobWebhook(context.Background(), contract.RecordWebhookInput{JobID: jobID, Run: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res != (contract.RecordWebhookResult{}) {
		t.Fatalf("result = %+v: the activity starts deliveries itself", res)
	}
	for _, d := range f.starter.take() {
		if d.Job() == jobID && strings.HasPrefix(d.Event, "job.") {
			return recorded{DeliveryID: d.ID, EventID: d.EventID}
		}
	}
	return recorded{}
}

// body is what the delivery sends: its event's payload.
func (f *fixture) body(t *testing.T, d *models.WebhookDelivery) []byte {
	t.Helper()
	var ev models.WebhookEvent
	if err := f.db.Where("id = ?", d.EventID).Take(&ev).Error; err != nil {
		t.Fatal(err)
	}
	return ev.Payload
}

func (f *fixture) delivery(t *testing.T, id string) *models.WebhookDelivery {
	t.Helper()
	d, err := models.GetWebhookDelivery(f.db, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func errorType(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}

func TestRecordJobWebhook(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, "https://shop.example/hook")
		res := f.record(t, f.job.ID)
		// The event keeps the ID its only delivery had before endpoints; the delivery is the event's
		// to the endpoint.
		want := recorded{EventID: models.WebhookDeliveryID(f.job.ID, 1, "job.completed")}
		want.DeliveryID = models.EventDeliveryID(want.EventID, f.endpoint.ID)
		if res != want {
			t.Fatalf("recorded = %+v, want %+v", res, want)
		}
		d := f.delivery(t, res.DeliveryID)
		if d.Event != "job.completed" || d.Status != models.WebhookPending || d.CallbackURL != "https://shop.example/hook" ||
			d.Job() != f.job.ID || d.Run != 1 || d.StartDueAt == nil || d.EndpointID == nil || *d.EndpointID != f.endpoint.ID {
			t.Fatalf("delivery = %+v", d)
		}
		var p webhooks.Payload
		body := f.body(t, d)
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		if p.DeliveryID != d.EventID || p.Event != "job.completed" || !p.DeliveryCreatedAt.Equal(d.CreatedAt) || p.ID != f.job.ID || p.Status != "completed" ||
			p.ProductRef != "mug-01" || len(p.Outputs) != 1 || !strings.HasPrefix(p.Outputs[0].URL, "http://api.example/files/") {
			t.Fatalf("payload = %s", body)
		}

		// Executed again (a retried or replayed local activity): the same delivery, nothing new,
		// its start still owed until it is recorded.
		if again := f.record(t, f.job.ID); again != want {
			t.Fatalf("second call = %+v", again)
		}
		var n int64
		db.Model(&models.WebhookDelivery{}).Count(&n)
		if n != 1 {
			t.Fatalf("%d deliveries after two calls, want 1", n)
		}
		// The job's end ended its one-job order: order.completed is recorded too, with no delivery
		// (the endpoint did not subscribe to it).
		var events []models.WebhookEvent
		db.Where("order_id = ?", f.job.OrderID).Order("type").Find(&events)
		if len(events) != 1 || events[0].Type != "job.completed" {
			t.Fatalf("events = %+v", events)
		}

		// An expired job is reported as job.failed with its own status.
		expired := f.newJob(t, &f.inst.ID, status.JobExpired)
		res = f.record(t, expired.ID)
		if d := f.delivery(t, res.DeliveryID); d.Event != "job.failed" || !strings.Contains(string(f.body(t, d)), `"expired"`) {
			t.Fatalf("expired job: %+v %s", d, f.body(t, d))
		}

		// A job of the external API (no installation) is a record.failed event of its account,
		// which has no endpoint here.
		external := f.newJob(t, nil, status.JobFailed)
		if res := f.record(t, external.ID); res.DeliveryID != "" {
			t.Fatalf("external job = %+v", res)
		}
		var ev models.WebhookEvent
		if err := db.Where("job_id = ?", external.ID).Take(&ev).Error; err != nil || ev.Type != "record.failed" || ev.InstallationID != nil {
			t.Fatalf("external job's event = %+v, %v", ev, err)
		}

		// A job that has not ended, or a superseded run, is an error that is not retried.
		running := f.newJob(t, &f.inst.ID, status.JobInProgress)
		if _, err := f.acts.RecordJobWebhook(context.Background(), contract.RecordWebhookInput{JobID: running.ID, Run: 1}); errorType(err) != contract.ErrTypeWebhookJobNotTerminal {
			t.Fatalf("running job: %v", err)
		}
		if _, err := f.acts.RecordJobWebhook(context.Background(), contract.RecordWebhookInput{JobID: f.job.ID, Run: 2}); errorType(err) != contract.ErrTypeWebhookJobNotTerminal {
			t.Fatalf("other run: %v", err)
		}

		// An installation without endpoints gets the event and no delivery row.
		db.Model(&models.WebhookEndpoint{}).Where("id = ?", f.endpoint.ID).Update("deleted_at", time.Now())
		cancelled := f.newJob(t, &f.inst.ID, status.JobCancelled)
		if res := f.record(t, cancelled.ID); res.DeliveryID != "" {
			t.Fatalf("no endpoint: %+v", res)
		}
		db.Model(&models.WebhookDelivery{}).Count(&n)
		if n != 2 {
			t.Fatalf("%d deliveries, want 2 (completed and expired)", n)
		}
	})
}

func (f *fixture) deliver(t *testing.T, in contract.DeliverInput) contract.DeliverResult {
	t.Helper()
	res, err := f.acts.DeliverWebhook(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestDeliverWebhookSuccessSignsWithEveryValidSecret(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, answerWith(http.StatusNoContent))
	f := newFixture(t, testdb.Open(t, testdb.SQLiteURL(t)), rc.URL+"/hooks")
	previous := f.secret
	if _, err := models.RotateWebhookSecret(f.db, f.box, f.inst.ID, webhooks.NewSecret(), time.Now()); err != nil {
		t.Fatal(err)
	}
	inst, _ := models.GetInstallation(f.db, f.inst.ID)
	current, _ := f.box.Open(inst.WebhookSecretEnc)

	rec := f.record(t, f.job.ID)
	id := rec.DeliveryID
	before := time.Now().Unix()
	res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1, NextDelay: 5 * time.Second})
	if !res.Delivered || res.StatusCode != 204 || res.RetryAfter != 0 {
		t.Fatalf("result = %+v", res)
	}
	reqs := rc.got()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	d := f.delivery(t, id)
	if string(r.body) != string(f.body(t, d)) {
		t.Fatalf("sent %s, stored %s", r.body, f.body(t, d))
	}
	ts, _ := strconv.ParseInt(r.header.Get("webhook-timestamp"), 10, 64)
	if r.header.Get("webhook-id") != rec.EventID || ts < before || ts > time.Now().Unix() ||
		r.header.Get("Content-Type") != "application/json" || r.header.Get("User-Agent") != "shotflow-webhooks/1" ||
		r.header.Get("X-Service-Signature") != r.header.Get("webhook-signature") || len(strings.Fields(r.header.Get("webhook-signature"))) != 2 {
		t.Fatalf("headers = %v", r.header)
	}
	for _, s := range []string{current, previous} {
		wh, _ := standardwebhooks.NewWebhook(s)
		if err := wh.Verify(r.body, r.header); err != nil {
			t.Errorf("official library: %v", err)
		}
	}
	if d.Status != models.WebhookDelivered || d.Attempts != 1 || d.DeliveredAt == nil || *d.LastStatusCode != 204 || d.NextAttemptAt != nil {
		t.Fatalf("delivery = %+v", d)
	}
	attempts, _ := models.WebhookAttempts(f.db, id)
	if len(attempts) != 1 || attempts[0].Attempt != 1 || attempts[0].Replay || *attempts[0].StatusCode != 204 || attempts[0].Error != "" {
		t.Fatalf("attempts = %+v", attempts)
	}

	// A retried activity after a recorded success does not send again…
	if res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1}); !res.Delivered || len(rc.got()) != 1 {
		t.Fatalf("retry after success: %+v, %d requests", res, len(rc.got()))
	}
	// …but a replay does: same webhook-id and body, a new timestamp.
	time.Sleep(1100 * time.Millisecond)
	if res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1, Replay: true}); !res.Delivered {
		t.Fatalf("replay: %+v", res)
	}
	reqs = rc.got()
	if len(reqs) != 2 || reqs[1].header.Get("webhook-id") != rec.EventID || string(reqs[1].body) != string(reqs[0].body) ||
		reqs[1].header.Get("webhook-timestamp") == reqs[0].header.Get("webhook-timestamp") {
		t.Fatalf("replay request: %v", reqs[len(reqs)-1].header)
	}
	attempts, _ = models.WebhookAttempts(f.db, id)
	if len(attempts) != 2 || !attempts[1].Replay || f.delivery(t, id).Attempts != 2 {
		t.Fatalf("attempts after replay = %+v", attempts)
	}
	// Two POSTs were sent, both delivered; the retry that sent nothing is not an attempt.
	scraped := metricstest.Serve(t, f.acts.Metrics.WorkerHandler())
	for _, name := range []string{metrics.WebhookDeliveries, metrics.WebhookDeliveryDuration} {
		if got, all := scraped.Value(name, map[string]string{"outcome": metrics.WebhookDelivered}), scraped.Value(name, nil); got != 2 || all != 2 {
			t.Errorf("%s: %v delivered of %v, want 2 of 2", name, got, all)
		}
	}
}

// A delivery recorded before the job's fields moved to the top level (the job under "data") is
// replayed in the current shape: the same values, signed over the bytes that are sent.
func TestDeliverWebhookSendsALegacyPayloadInTheCurrentShape(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		rc := newReceiver(t, answerWith(http.StatusNoContent))
		f := newFixture(t, db, rc.URL+"/hooks")
		rec := f.record(t, f.job.ID)
		id := rec.DeliveryID
		current := f.body(t, f.delivery(t, id))
		var p webhooks.Payload
		if err := json.Unmarshal(current, &p); err != nil {
			t.Fatal(err)
		}
		legacy, err := json.Marshal(map[string]any{"id": p.DeliveryID, "type": p.Event, "created_at": p.DeliveryCreatedAt, "data": p.Job})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Model(&models.WebhookDelivery{}).Where("id = ?", id).Update("payload", models.JSON(legacy)).Error; err != nil {
			t.Fatal(err)
		}

		if res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1, Replay: true}); !res.Delivered {
			t.Fatalf("replay: %+v", res)
		}
		reqs := rc.got()
		if len(reqs) != 1 {
			t.Fatalf("%d requests", len(reqs))
		}
		wh, _ := standardwebhooks.NewWebhook(f.secret)
		if err := wh.Verify(reqs[0].body, reqs[0].header); err != nil || reqs[0].header.Get("webhook-id") != rec.EventID {
			t.Fatalf("the sent body does not verify (%v) or has another webhook-id: %v", err, reqs[0].header)
		}
		var sent, want map[string]any
		if err := json.Unmarshal(reqs[0].body, &sent); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(current, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(sent, want) {
			t.Fatalf("legacy payload sent as\n%s\nwant what is recorded today\n%s", reqs[0].body, current)
		}
	})
}

// A delivery recorded before livemode existed is sent with the mode of its installation: false,
// at the top level, for a test twin's job.
func TestDeliverWebhookAddsLivemodeToAnEarlierBody(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		rc := newReceiver(t, answerWith(http.StatusNoContent))
		f := newFixture(t, db, rc.URL+"/hooks")
		if err := db.Model(&models.Installation{}).Where("id = ?", f.inst.ID).Update("test_mode", true).Error; err != nil {
			t.Fatal(err)
		}
		rec := f.record(t, f.job.ID)
		var stored map[string]any
		if err := json.Unmarshal(f.body(t, f.delivery(t, rec.DeliveryID)), &stored); err != nil {
			t.Fatal(err)
		}
		delete(stored, "livemode")
		earlier, err := json.Marshal(stored)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Model(&models.WebhookDelivery{}).Where("id = ?", rec.DeliveryID).Update("payload", models.JSON(earlier)).Error; err != nil {
			t.Fatal(err)
		}
		if res := f.deliver(t, contract.DeliverInput{DeliveryID: rec.DeliveryID, Attempt: 1, Replay: true}); !res.Delivered {
			t.Fatalf("replay: %+v", res)
		}
		reqs := rc.got()
		if len(reqs) != 1 {
			t.Fatalf("%d requests", len(reqs))
		}
		var sent map[string]any
		if err := json.Unmarshal(reqs[0].body, &sent); err != nil {
			t.Fatal(err)
		}
		if sent["livemode"] != false || sent["id"] != f.job.ID {
			t.Fatalf("an earlier body of a test-mode installation sent as %s", reqs[0].body)
		}
	})
}

func TestDeliverWebhookFailures(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	cases := []struct {
		name       string
		respond    func(http.ResponseWriter, int)
		code       int
		retryAfter time.Duration
		errText    string
		next       time.Duration // expected next_attempt_at - start
		outcome    string        // of the attempts in metrics
	}{
		{"500", answerWith(500), 500, 0, "HTTP 500", 5 * time.Second, metrics.WebhookRejected},
		{"429 with Retry-After", func(w http.ResponseWriter, _ int) {
			w.Header().Set("Retry-After", "600")
			w.WriteHeader(http.StatusTooManyRequests)
		}, 429, 10 * time.Minute, "HTTP 429", 10 * time.Minute, metrics.WebhookRejected},
		{"slow receiver", func(w http.ResponseWriter, _ int) {
			time.Sleep(time.Second)
			w.WriteHeader(http.StatusOK)
		}, 0, 0, "no answer within 300ms", 5 * time.Second, metrics.WebhookUnreachable},
		{"redirect", func(w http.ResponseWriter, _ int) {
			w.Header().Set("Location", "https://elsewhere.example/")
			w.WriteHeader(http.StatusMovedPermanently)
		}, 301, 0, "HTTP 301", 5 * time.Second, metrics.WebhookRejected},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t, tc.respond)
			f := newFixture(t, db, rc.URL)
			id := f.record(t, f.job.ID).DeliveryID
			start := time.Now()
			res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 3, NextDelay: 5 * time.Second})
			if res.Delivered || res.StatusCode != tc.code || res.RetryAfter != tc.retryAfter {
				t.Fatalf("result = %+v", res)
			}
			d := f.delivery(t, id)
			if d.Status != models.WebhookDelivering || d.Attempts != 1 || d.LastError != tc.errText || d.DeliveredAt != nil || d.NextAttemptAt == nil {
				t.Fatalf("delivery = %+v", d)
			}
			if got := d.NextAttemptAt.Sub(start); got < tc.next-time.Second || got > tc.next+2*time.Second {
				t.Errorf("next attempt in %v, want about %v", got, tc.next)
			}
			attempts, _ := models.WebhookAttempts(f.db, id)
			if len(attempts) != 1 || attempts[0].Attempt != 3 || attempts[0].Error != tc.errText || (tc.code == 0) != (attempts[0].StatusCode == nil) {
				t.Fatalf("attempts = %+v", attempts)
			}
			if tc.name == "slow receiver" && (attempts[0].LatencyMS < 250 || attempts[0].LatencyMS > 900) {
				t.Errorf("latency %d ms, want about the 300 ms timeout", attempts[0].LatencyMS)
			}
			// The last attempt of a run schedules nothing.
			f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 8})
			if d := f.delivery(t, id); d.NextAttemptAt != nil || d.Attempts != 2 {
				t.Fatalf("after the last attempt: %+v", d)
			}
			scraped := metricstest.Serve(t, f.acts.Metrics.WorkerHandler())
			for _, name := range []string{metrics.WebhookDeliveries, metrics.WebhookDeliveryDuration} {
				if got, all := scraped.Value(name, map[string]string{"outcome": tc.outcome}), scraped.Value(name, nil); got != 2 || all != 2 {
					t.Errorf("%s: %v %s of %v, want 2 of 2", name, got, tc.outcome, all)
				}
			}
		})
	}
}

func TestDeliverWebhookRefusesPrivateCallbacksUnlessAllowed(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, answerWith(200))
	f := newFixture(t, testdb.Open(t, testdb.SQLiteURL(t)), rc.URL) // 127.0.0.1
	f.acts.Webhooks = webhooks.NewClient(webhooks.ClientOptions{})
	id := f.record(t, f.job.ID).DeliveryID
	res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1, NextDelay: time.Second})
	if res.Delivered || len(rc.got()) != 0 {
		t.Fatalf("a loopback callback was called: %+v", res)
	}
	if d := f.delivery(t, id); !strings.Contains(d.LastError, "not allowed") {
		t.Fatalf("last_error = %q", d.LastError)
	}
}

func TestDeliverWebhookErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.Open(t, testdb.SQLiteURL(t)), "https://shop.example/hook")
	_, err := f.acts.DeliverWebhook(context.Background(), contract.DeliverInput{DeliveryID: models.NewID(), Attempt: 1})
	if errorType(err) != contract.ErrTypeWebhookDeliveryNotFound {
		t.Fatalf("unknown delivery: %v", err)
	}
	// The endpoint was disabled: no request, the delivery is held and its run stops.
	id := f.record(t, f.job.ID).DeliveryID
	f.db.Model(&models.WebhookEndpoint{}).Where("id = ?", f.endpoint.ID).Update("status", models.EndpointDisabled)
	if res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1}); res.Delivered || !res.Stopped {
		t.Fatalf("disabled endpoint: %+v", res)
	}
	if d := f.delivery(t, id); d.Attempts != 0 || d.Status != models.WebhookHeld {
		t.Fatalf("delivery to a disabled endpoint = %+v", d)
	}
	// The endpoint was deleted: no request, the delivery fails and its run stops.
	f.db.Model(&models.WebhookEndpoint{}).Where("id = ?", f.endpoint.ID).Updates(map[string]any{"status": models.EndpointEnabled, "deleted_at": time.Now()})
	if res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1}); res.Delivered || !res.Stopped {
		t.Fatalf("deleted endpoint: %+v", res)
	}
	if d := f.delivery(t, id); d.Attempts != 0 || d.Status != models.WebhookFailed || d.LastError != "the endpoint was deleted" {
		t.Fatalf("delivery to a deleted endpoint = %+v", d)
	}
	if err := f.acts.MarkWebhookFailed(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if d := f.delivery(t, id); d.Status != models.WebhookFailed {
		t.Fatalf("status = %s", d.Status)
	}
	// Each end is counted once, however often the step that made it runs again (an activity
	// retried after it committed): the delivery was held once and failed once.
	if res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1}); !res.Stopped {
		t.Fatalf("deleted endpoint, again: %+v", res)
	}
	if err := f.acts.MarkWebhookFailed(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	scraped := metricstest.Serve(t, f.acts.Metrics.WorkerHandler())
	for status, want := range map[string]float64{models.WebhookHeld: 1, models.WebhookFailed: 1} {
		if got := scraped.Value(metrics.WebhookDeliveriesEnded, map[string]string{"status": status}); got != want {
			t.Errorf("%s{status=%s} = %v, want %v", metrics.WebhookDeliveriesEnded, status, got, want)
		}
	}
}

// An endpoint deleted while an attempt to it is under way (the client's DELETE /webhook-endpoints
// lands while the receiver is answering): the deletion ends the delivery failed, and the attempt,
// recorded after it, neither brings the delivery back to delivering nor schedules another attempt;
// the run stops and counts the delivery failed. Had the deletion come first, no request was made.
func TestDeliverWebhookStopsWhenTheEndpointIsDeletedDuringTheAttempt(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		var f *fixture
		rc := newReceiver(t, func(w http.ResponseWriter, _ int) {
			scope := models.WebhookScope{AccountID: f.inst.AccountID, InstallationID: f.inst.ID}
			if _, err := f.acts.Store.DeleteWebhookEndpoint(context.Background(), scope, f.endpoint.ID, time.Now()); err != nil {
				t.Errorf("delete the endpoint: %v", err)
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		f = newFixture(t, db, rc.URL+"/hooks")
		id := f.record(t, f.job.ID).DeliveryID
		res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1, NextDelay: 5 * time.Second})
		if res.Delivered || !res.Stopped || res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("attempt during the deletion = %+v, want a stopped run", res)
		}
		d := f.delivery(t, id)
		if d.Status != models.WebhookFailed || d.NextAttemptAt != nil || d.Attempts != 1 || d.LastError != "HTTP 503" || len(rc.got()) != 1 {
			t.Errorf("delivery = status %s, next attempt %v, %d attempts, last error %q (%d requests); want failed with nothing next",
				d.Status, d.NextAttemptAt, d.Attempts, d.LastError, len(rc.got()))
		}
		scraped := metricstest.Serve(t, f.acts.Metrics.WorkerHandler())
		if got := scraped.Value(metrics.WebhookDeliveriesEnded, map[string]string{"status": models.WebhookFailed}); got != 1 {
			t.Errorf("%s{status=failed} = %v, want 1", metrics.WebhookDeliveriesEnded, got)
		}
	})
}

// An attempt that fails once every attempt to the endpoint has failed for DisableAfter disables
// it: endpoint.disabled goes to the installation's other endpoint subscribed to it (not to the
// disabled one), the metric counts it, and the delivery's next attempt holds it without a request.
func TestDeliverWebhookDisablesAnEndpointFailingForTheWindow(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		rc := newReceiver(t, answerWith(http.StatusInternalServerError))
		f := newFixture(t, db, rc.URL+"/hooks")
		f.acts.DisableAfter = time.Minute
		now := time.Now().UTC()
		watcher := models.WebhookEndpoint{ID: models.NewID(), AccountID: f.inst.AccountID, InstallationID: &f.inst.ID,
			URL: "https://ops.example/hooks", Events: models.StringList{"endpoint.disabled"}, Status: models.EndpointEnabled,
			CreatedAt: now, UpdatedAt: now}
		if err := db.Create(&watcher).Error; err != nil {
			t.Fatal(err)
		}
		id := f.record(t, f.job.ID).DeliveryID

		// Failing for less than the window: the attempt fails, the endpoint stays enabled.
		if res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1, NextDelay: time.Second}); res.Delivered || res.Stopped {
			t.Fatalf("first attempt = %+v", res)
		}
		var ep models.WebhookEndpoint
		db.Take(&ep, "id = ?", f.endpoint.ID)
		if ep.Status != models.EndpointEnabled || ep.FailingSince == nil {
			t.Fatalf("after one failed attempt: %+v", ep)
		}
		if owed := f.starter.take(); len(owed) != 0 {
			t.Fatalf("started %+v before the window passed", owed)
		}

		// Failing since before the window: this failed attempt disables it.
		db.Model(&models.WebhookEndpoint{}).Where("id = ?", f.endpoint.ID).Update("failing_since", now.Add(-time.Hour))
		f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 2, NextDelay: time.Second})
		db.Take(&ep, "id = ?", f.endpoint.ID)
		if ep.Status != models.EndpointDisabled || ep.DisabledReason != models.EndpointDisabledFailing || ep.DisabledAt == nil {
			t.Fatalf("after the window: %+v", ep)
		}
		owed := f.starter.take()
		if len(owed) != 1 || owed[0].Event != "endpoint.disabled" || *owed[0].EndpointID != watcher.ID {
			t.Fatalf("started %+v, want endpoint.disabled to the watcher only", owed)
		}
		var body map[string]any
		if err := json.Unmarshal(f.body(t, &owed[0]), &body); err != nil || body["endpoint"].(map[string]any)["id"] != f.endpoint.ID {
			t.Fatalf("endpoint.disabled body = %v (%v)", body, err)
		}

		// The delivery's next attempt makes no request and holds it.
		requests := len(rc.got())
		if res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 3, NextDelay: time.Second}); !res.Stopped {
			t.Fatalf("attempt on a disabled endpoint = %+v", res)
		}
		if d := f.delivery(t, id); d.Status != models.WebhookHeld || len(rc.got()) != requests {
			t.Fatalf("delivery = %+v after %d requests (were %d)", d, len(rc.got()), requests)
		}
		scraped := metricstest.Serve(t, f.acts.Metrics.WorkerHandler())
		if got := scraped.Value(metrics.WebhookEndpointsDisabled, nil); got != 1 {
			t.Errorf("%s = %v, want 1", metrics.WebhookEndpointsDisabled, got)
		}
		if got := scraped.Value(metrics.WebhookDeliveriesEnded, map[string]string{"status": models.WebhookHeld}); got != 1 {
			t.Errorf("%s{status=held} = %v, want 1", metrics.WebhookDeliveriesEnded, got)
		}
	})
}
