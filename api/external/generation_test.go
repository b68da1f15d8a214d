package external_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

// photoFixture inserts a ready product photo of the account (as GET /products lists it) and
// returns its product_images ID and its asset.
func (e *env) photoFixture(accountID, name string) (string, models.Asset) {
	e.t.Helper()
	now := time.Now().UTC()
	product := models.Product{ID: models.NewID(), AccountID: accountID, DisplayName: name, CreatedAt: now, UpdatedAt: now}
	product.ExternalRef = product.ID
	asset := models.Asset{ID: models.NewID(), AccountID: accountID, Kind: models.AssetKindUpload, Status: status.AssetReady,
		Filename: "p.png", ContentType: "image/png", SizeBytes: 10, BlobKey: "uploads/" + accountID + "/p", Width: 64, Height: 64,
		CreatedAt: now, UpdatedAt: now}
	img := models.ProductImage{ID: models.NewID(), AccountID: accountID, ProductID: product.ID, AssetID: asset.ID, CreatedAt: now}
	img.ExternalRef = img.ID
	for _, row := range []any{&product, &asset, &img} {
		if err := e.db.Create(row).Error; err != nil {
			e.t.Fatal(err)
		}
	}
	return img.ID, asset
}

// packshotFixture inserts a packshot of the photo with the given voting and returns its ID.
func (e *env) packshotFixture(accountID, photoID, voting string) string {
	e.t.Helper()
	var img models.ProductImage
	if err := e.db.Take(&img, "id = ?", photoID).Error; err != nil {
		e.t.Fatal(err)
	}
	now := time.Now().UTC()
	asset := models.Asset{ID: models.NewID(), AccountID: accountID, Kind: models.AssetKindOutput, Status: status.AssetReady,
		Filename: "s.png", ContentType: "image/png", SizeBytes: 10, BlobKey: "outputs/s-" + models.NewID(), CreatedAt: now, UpdatedAt: now}
	p := models.Packshot{ID: models.NewID(), AccountID: accountID, ProductID: img.ProductID, AssetID: asset.ID,
		Voting: voting, SourceImageID: &photoID, CreatedAt: now}
	if voting == models.VotingAccepted {
		p.VotingAt = &now
	}
	for _, row := range []any{&asset, &p} {
		if err := e.db.Create(row).Error; err != nil {
			e.t.Fatal(err)
		}
	}
	return p.ID
}

// completedShoot inserts a completed photo-shoot job of the account with one output and returns
// the job ID and the output asset ID.
func (e *env) completedShoot(accountID string, st string) (string, string) {
	e.t.Helper()
	now := time.Now().UTC()
	o := models.Order{ID: models.NewID(), AccountID: accountID, API: models.APIExternal, JobType: jobtype.PhotoShoot,
		SessionConfig: models.JSON(`{}`), Status: status.OrderCompleted, JobsTotal: 1, CreatedAt: now, UpdatedAt: now}
	j := models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: accountID, JobType: jobtype.PhotoShoot,
		AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: st, Voting: models.VotingPending,
		CreatedAt: now, UpdatedAt: now}
	rows := []any{&o, &j}
	out := models.Asset{ID: models.OutputAssetID(j.ID, 1, 0), AccountID: accountID, Kind: models.AssetKindOutput,
		Status: status.AssetReady, Filename: "o.png", ContentType: "image/png", SizeBytes: 10, BlobKey: "outputs/" + j.ID,
		JobID: &j.ID, CreatedAt: now, UpdatedAt: now}
	if st == status.JobCompleted {
		rows = append(rows, &out)
	}
	for _, row := range rows {
		if err := e.db.Create(row).Error; err != nil {
			e.t.Fatal(err)
		}
	}
	return j.ID, out.ID
}

// accepted checks a generation response of that many records and returns the order it names,
// with its jobs and the record IDs: e.accepted(n)(e.post(...)).
func (e *env) accepted(records int) func(code int, body map[string]any) (models.Order, []models.Job, []string) {
	return func(code int, body map[string]any) (models.Order, []models.Job, []string) {
		return e.checkAccepted(code, body, records)
	}
}

func (e *env) checkAccepted(code int, body map[string]any, records int) (models.Order, []models.Job, []string) {
	e.t.Helper()
	if code != http.StatusOK {
		e.t.Fatalf("status %d %v, want 200", code, body)
	}
	var ids []string
	for _, v := range body["createdRecordIds"].([]any) {
		ids = append(ids, v.(string))
	}
	if len(ids) != records {
		e.t.Fatalf("createdRecordIds has %d ids, want %d", len(ids), records)
	}
	var o models.Order
	if err := e.db.Take(&o, "id = ?", body["orderId"]).Error; err != nil {
		e.t.Fatalf("order %v: %v", body["orderId"], err)
	}
	if body["batchId"] != o.ID || body["reservationId"] != models.ReservationID(o.ID) ||
		int64(body["creditsReserved"].(float64)) != o.CreditsReserved {
		e.t.Errorf("response %v does not match order %+v", body, o)
	}
	var jobs []models.Job
	if err := e.db.Where("order_id = ?", o.ID).Order("position").Find(&jobs).Error; err != nil {
		e.t.Fatal(err)
	}
	return o, jobs, ids
}

// nothingCreated checks that the account has no order and its balance is what it was.
func (e *env) nothingCreated(accountID string, balance int64) {
	e.t.Helper()
	var orders, jobs int64
	e.db.Model(&models.Order{}).Where("account_id = ?", accountID).Count(&orders)
	e.db.Model(&models.Job{}).Where("account_id = ?", accountID).Count(&jobs)
	acc, err := models.GetAccount(e.db, accountID)
	if err != nil {
		e.t.Fatal(err)
	}
	if orders != 0 || jobs != 0 || acc.CreditBalance != balance || acc.CreditsReserved != 0 {
		e.t.Errorf("after a refused request: %d orders, %d jobs, balance %d reserved %d; want nothing and %d",
			orders, jobs, acc.CreditBalance, acc.CreditsReserved, balance)
	}
}

func TestRegisterIdeas(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		for _, tc := range []struct {
			path string
			kind models.ReferenceKind
			job  string
		}{
			{"/models/register-ideas", models.KindFashionModel, jobtype.ModelIdea},
			{"/sceneries/register-ideas", models.KindScenery, jobtype.SceneryIdea},
		} {
			account, key := e.newAccount(external.ScopeRegister)
			o, jobs, ids := e.accepted(3)(e.post(key, tc.path, map[string]any{"preferences": "  red hair, freckles  ", "count": 3}))
			if o.JobType != tc.job || o.API != models.APIExternal || o.CreditsReserved != 3 || o.CorrelationID == "" || len(jobs) != 3 {
				t.Errorf("%s: order %+v with %d jobs", tc.path, o, len(jobs))
			}
			for i, j := range jobs {
				var item models.ReferenceItem
				if err := db.Table(tc.kind.Table()).Take(&item, "id = ?", ids[i]).Error; err != nil {
					t.Fatalf("%s: record %s: %v", tc.path, ids[i], err)
				}
				if item.Status != models.RefStatusInProgress || item.AccountID == nil || *item.AccountID != account ||
					item.JobID == nil || *item.JobID != j.ID || j.RecordID == nil || *j.RecordID != item.ID ||
					j.Prompt != "red hair, freckles" || item.Name != "red hair, freckles #"+string(rune('1'+i)) {
					t.Errorf("%s: record %+v, job %+v", tc.path, item, j)
				}
			}
			// The order's workflow carries the correlation ID in its memo.
			var memo map[string]any
			for i, s := range e.starts {
				if s.ID == workflows.OrderWorkflowID(o.ID) {
					memo = s.Memo
					_ = e.startArgs[i]
				}
			}
			if memo == nil || memo["correlation_id"] != o.CorrelationID {
				t.Errorf("%s: order workflow memo %v, want correlation_id %s", tc.path, memo, o.CorrelationID)
			}
			// count defaults to 10.
			e.accepted(external.DefaultIdeaCount)(e.post(key, tc.path, map[string]any{"preferences": "studio"}))
		}

		account, key := e.newAccount(external.ScopeRegister)
		for body, field := range map[string]string{
			`{"count": 2}`:                                         "preferences",
			`{"preferences": "   "}`:                               "preferences",
			`{"preferences": "x", "count": 21}`:                    "count",
			`{"preferences": "x", "count": 0}`:                     "count",
			`{"preferences": "x", "count": 1.5}`:                   "count",
			`{"preferences": "x", "count": "3"}`:                   "count",
			`{"preferences": 7}`:                                   "preferences",
			`{"preferences": "x", "colour": "red"}`:                "colour",
			`{"preferences": "` + strings.Repeat("a", 2001) + `"}`: "preferences",
			// The limit counts the text as sent (the document's maxLength), spaces included.
			`{"preferences": "linen` + strings.Repeat(" ", 2000) + `"}`: "preferences",
			`{"preferences": "x"`: "JSON",
			`[1]`:                 "",
		} {
			code, out := e.post(key, "/models/register-ideas", body)
			if msg := errorOf(t, out); code != http.StatusBadRequest || !strings.Contains(msg, field) {
				t.Errorf("%.40s: %d %q, want 400 naming %q", body, code, msg, field)
			}
		}
		e.nothingCreated(account, 100)
	})
}

func TestGenerationRefusals(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		body := map[string]any{"preferences": "linen", "count": 20}

		// 503: no worker polls the provider's generate queue. (First: a generator once seen is
		// remembered for a while.)
		idle, idleKey := e.newAccount(external.ScopeRegister)
		e.mu.Lock()
		e.generatorsDown = true
		e.mu.Unlock()
		req, _ := http.NewRequest(http.MethodPost, external.Base+"/models/register-ideas", strings.NewReader(`{"preferences":"x"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", idleKey)
		code, out, hdr := e.serve(req)
		if errorOf(t, out); code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
			t.Errorf("no generator: %d %v, want 503 with Retry-After", code, hdr)
		}
		e.nothingCreated(idle, 100)
		e.mu.Lock()
		e.generatorsDown = false
		e.mu.Unlock()

		// 402: 20 credits needed, 5 available; nothing is created.
		poor, poorKey := e.newAccount(external.ScopeRegister)
		if err := db.Model(&models.Account{}).Where("id = ?", poor).Update("credit_balance", 5).Error; err != nil {
			t.Fatal(err)
		}
		code, out = e.post(poorKey, "/sceneries/register-ideas", body)
		if msg := errorOf(t, out); code != http.StatusPaymentRequired || !strings.Contains(msg, "20") {
			t.Errorf("short balance: %d %q, want 402", code, msg)
		}
		e.nothingCreated(poor, 5)
		var items int64
		db.Table("sceneries").Where("account_id = ?", poor).Count(&items)
		if items != 0 {
			t.Errorf("a refused request left %d sceneries", items)
		}

		// 422: no configured provider generates the job type.
		catalog, err := catalog.Load()
		if err != nil {
			t.Fatal(err)
		}
		cfg := e.engineConfig
		cfg.Models = providers.MustNewRegistry(catalog, map[string]providers.Provider{})
		e.handler.Engine = engine.New(cfg)
		code, out = e.post(idleKey, "/models/register-ideas", body)
		if code != http.StatusUnprocessableEntity || out["errors"].(map[string]any)["modelNotResolved"] == nil {
			t.Errorf("no model: %d %v, want 422 modelNotResolved", code, out)
		}
		e.nothingCreated(idle, 100)

		// 403: a key without content.register.
		_, readKey := e.newAccount(external.ScopeRead)
		for _, path := range []string{"/models/register-ideas", "/sceneries/register-ideas", "/packshots/register-ideas",
			"/image-picker/register-ideas", "/video-picker/register-videos", "/reel/register-reel"} {
			if code, out := e.post(readKey, path, body); code != http.StatusForbidden {
				t.Errorf("%s without content.register: %d %v", path, code, out)
			}
		}
	})
}

func TestRegisterPackshots(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		account, key := e.newAccount(external.ScopeRegister)
		photo, asset := e.photoFixture(account, "Linen shirt")
		other, _ := e.newAccount(external.ScopeRegister)
		foreign, _ := e.photoFixture(other, "Theirs")

		_, jobs, ids := e.accepted(2)(e.post(key, "/packshots/register-ideas", map[string]any{
			"config": map[string]any{"product": map[string]any{"id": photo}}, "count": 2}))
		for i, j := range jobs {
			if j.JobType != jobtype.Packshot || j.RecordID == nil || *j.RecordID != ids[i] || j.InputAssetID == nil ||
				*j.InputAssetID != asset.ID || j.ProductLabel != "Linen shirt" {
				t.Errorf("packshot job %d: %+v", i, j)
			}
		}
		e.accepted(external.DefaultIdeaCount)(e.post(key, "/packshots/register-ideas", map[string]any{
			"config": map[string]any{"product": map[string]any{"id": photo}}}))

		// A preset's surcharge is charged per packshot; its scenery and model must exist (else 400).
		if err := models.SeedReference(db); err != nil {
			t.Fatal(err)
		}
		var paid models.Preset
		if err := db.Where("credit_cost > 0").Take(&paid).Error; err != nil {
			t.Fatal(err)
		}
		o, _, _ := e.accepted(1)(e.post(key, "/packshots/register-ideas", map[string]any{
			"config": map[string]any{"product": map[string]any{"id": photo}, "preset": map[string]any{"id": paid.ID},
				"scenery": map[string]any{"id": external.DefaultSceneryID}}, "count": 1}))
		if o.CreditsReserved != 1+paid.CreditCost {
			t.Errorf("with preset %s: reserved %d, want %d", paid.Slug, o.CreditsReserved, 1+paid.CreditCost)
		}

		before, _ := models.GetAccount(db, account)
		for _, tc := range []struct {
			body   map[string]any
			status int
			field  string
		}{
			{map[string]any{}, 400, "config.product.id"},
			{map[string]any{"config": map[string]any{}}, 400, "config.product.id"},
			{map[string]any{"config": map[string]any{"product": map[string]any{"id": "nope"}}}, 400, "config.product.id"},
			{map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}}, "count": 51}, 400, "count"},
			{map[string]any{"config": map[string]any{"product": map[string]any{"id": foreign}}}, 400, "config.product.id"},
			{map[string]any{"config": map[string]any{"product": map[string]any{"id": models.NewID()}}}, 400, "config.product.id"},
			{map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}, "scenery": map[string]any{"id": models.NewID()}}}, 400, "config.scenery.id"},
			{map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}, "model": map[string]any{"id": models.NewID()}}}, 400, "config.model.id"},
			{map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}, "preset": map[string]any{"id": models.NewID()}}}, 400, "config.preset.id"},
			{map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}, "colour": "red"}}, 400, "colour"},
			{map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}, "suggestions": strings.Repeat("a", 2001)}}, 400, "config.suggestions"},
			{map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}, "industry": "shoes" + strings.Repeat(" ", 1996)}}, 400, "config.industry"},
			{map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}, "industry": 3}}, 400, "config.industry"},
		} {
			code, out := e.post(key, "/packshots/register-ideas", tc.body)
			if msg := errorOf(t, out); code != tc.status || !strings.Contains(msg, tc.field) {
				t.Errorf("%v: %d %q, want %d naming %s", tc.body, code, msg, tc.status, tc.field)
			}
		}
		after, _ := models.GetAccount(db, account)
		if after.CreditBalance != before.CreditBalance {
			t.Errorf("refused requests moved credits: %d → %d", before.CreditBalance, after.CreditBalance)
		}
	})
}

func TestRegisterPhotoShootNeedsThePhotosOwnApprovedPackshot(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		account, key := e.newAccount(external.ScopeRegister)
		photo, _ := e.photoFixture(account, "Mug")
		body := map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}}, "count": 2}
		prerequisite := func(what string) {
			t.Helper()
			code, out := e.post(key, "/image-picker/register-ideas", body)
			errs, _ := out["errors"].(map[string]any)
			pre, _ := errs["prerequisiteNotMet"].(map[string]any)
			if code != http.StatusUnprocessableEntity || pre == nil || !slices.Contains(pre["details"].([]any), any("packshot_not_approved")) {
				t.Fatalf("%s: %d %v, want 422 prerequisiteNotMet packshot_not_approved", what, code, out)
			}
			e.nothingCreated(account, 100)
		}
		prerequisite("no packshot")
		code, out := e.post(key, "/image-picker/register-ideas", map[string]any{"config": map[string]any{"product": map[string]any{"id": models.NewID()}}})
		if msg := errorOf(t, out); code != http.StatusBadRequest || !strings.Contains(msg, "config.product.id") {
			t.Errorf("unknown photo: %d %q, want 400 naming config.product.id", code, msg)
		}
		e.packshotFixture(account, photo, models.VotingPending)
		prerequisite("an un-rated packshot")
		// Another photo of the same product has an approved packshot: it is not this photo's.
		var img models.ProductImage
		db.Take(&img, "id = ?", photo)
		now := time.Now().UTC()
		sibling := models.ProductImage{ID: models.NewID(), AccountID: account, ProductID: img.ProductID, AssetID: img.AssetID, CreatedAt: now}
		sibling.ExternalRef = sibling.ID
		if err := db.Create(&sibling).Error; err != nil {
			t.Fatal(err)
		}
		e.packshotFixture(account, sibling.ID, models.VotingAccepted)
		prerequisite("only a sibling photo's approved packshot")
		archived := e.packshotFixture(account, photo, models.VotingAccepted)
		db.Model(&models.Packshot{}).Where("id = ?", archived).Update("archived_at", now)
		prerequisite("an archived approved packshot")

		own := e.packshotFixture(account, photo, models.VotingAccepted)
		_, jobs, ids := e.accepted(2)(e.post(key, "/image-picker/register-ideas", body))
		for i, j := range jobs {
			if j.JobType != jobtype.PhotoShoot || j.PackshotID == nil || *j.PackshotID != own || ids[i] != j.ID {
				t.Errorf("shoot job %d: %+v, want packshot %s", i, j, own)
			}
		}

		// Presets: a required scenery must be named; a recommended one falls back to the default.
		if err := models.SeedReference(db); err != nil {
			t.Fatal(err)
		}
		required, recommended := models.SceneryRequired, models.SceneryRecommended
		var presets []models.Preset
		db.Where("type = ?", models.PresetTypeSystem).Order("position").Find(&presets)
		if len(presets) < 2 {
			t.Fatal("the seed has fewer than two presets")
		}
		db.Model(&models.Preset{}).Where("id = ?", presets[0].ID).Update("scenery_requirement", required)
		db.Model(&models.Preset{}).Where("id = ?", presets[1].ID).Update("scenery_requirement", recommended)
		withPreset := func(id string) map[string]any {
			return map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}, "preset": map[string]any{"id": id}}, "count": 1}
		}
		code, out = e.post(key, "/image-picker/register-ideas", withPreset(presets[0].ID))
		if msg := errorOf(t, out); code != http.StatusBadRequest || !strings.Contains(msg, "config.scenery.id") {
			t.Errorf("required scenery missing: %d %q", code, msg)
		}
		o, _, _ := e.accepted(1)(e.post(key, "/image-picker/register-ideas", withPreset(presets[1].ID)))
		if !strings.Contains(string(o.SessionConfig), external.DefaultSceneryID) {
			t.Errorf("recommended scenery: session %s lacks the default scenery", o.SessionConfig)
		}

		// 422 when no model generates photo shoots.
		catalog, _ := catalog.Load()
		cfg := e.engineConfig
		cfg.Models = providers.MustNewRegistry(catalog, map[string]providers.Provider{})
		e.handler.Engine = engine.New(cfg)
		if code, out := e.post(key, "/image-picker/register-ideas", body); code != http.StatusUnprocessableEntity {
			t.Errorf("no model: %d %v", code, out)
		}
	})
}

func TestRegisterVideosAndReels(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		account, key := e.newAccount(external.ScopeRegister)
		photo, asset := e.photoFixture(account, "Vase")
		shoot, output := e.completedShoot(account, status.JobCompleted)
		running, _ := e.completedShoot(account, status.JobInProgress)
		other, _ := e.newAccount(external.ScopeRegister)
		foreign, _ := e.photoFixture(other, "Theirs")

		_, jobs, ids := e.accepted(1)(e.post(key, "/video-picker/register-videos", map[string]any{"imageId": photo, "suggestion": "slow zoom"}))
		if j := jobs[0]; j.JobType != jobtype.Video || ids[0] != j.ID || !slices.Equal(j.Inputs(), []string{asset.ID}) ||
			j.Prompt != "slow zoom" || j.AIModel != "local/motion-v1" || j.CreditCost != 3 {
			t.Errorf("video job %+v", j)
		}
		_, jobs, _ = e.accepted(1)(e.post(key, "/video-picker/register-videos", map[string]any{"generatedImageId": shoot, "provider": "local"}))
		if !slices.Equal(jobs[0].Inputs(), []string{output}) {
			t.Errorf("video of a shoot reads %v, want %s", jobs[0].Inputs(), output)
		}
		for _, tc := range []struct {
			body   map[string]any
			status int
			field  string
		}{
			{map[string]any{}, 400, "imageId"},
			{map[string]any{"imageId": photo, "generatedImageId": shoot}, 400, "imageId"},
			{map[string]any{"imageId": "x"}, 400, "imageId"},
			{map[string]any{"generatedImageId": running}, 400, "generatedImageId"},
			{map[string]any{"imageId": photo, "provider": "fal"}, 400, "provider"},
			{map[string]any{"imageId": foreign}, 400, "imageId"},
			{map[string]any{"generatedImageId": photo}, 400, "generatedImageId"},
		} {
			code, out := e.post(key, "/video-picker/register-videos", tc.body)
			if msg := errorOf(t, out); code != tc.status || !strings.Contains(msg, tc.field) {
				t.Errorf("%v: %d %q, want %d naming %s", tc.body, code, msg, tc.status, tc.field)
			}
		}

		_, jobs, _ = e.accepted(1)(e.post(key, "/reel/register-reel", map[string]any{"imagesIds": []string{shoot, photo, shoot}}))
		if j := jobs[0]; j.JobType != jobtype.Reel || !slices.Equal(j.Inputs(), []string{output, asset.ID, output}) {
			t.Errorf("reel job %+v inputs %v", j, j.Inputs())
		}
		eleven := make([]string, 11)
		for i := range eleven {
			eleven[i] = photo
		}
		for _, tc := range []struct {
			body   map[string]any
			status int
			field  string
		}{
			{map[string]any{}, 400, "imagesIds"},
			{map[string]any{"imagesIds": []string{}}, 400, "imagesIds"},
			{map[string]any{"imagesIds": eleven}, 400, "imagesIds"},
			{map[string]any{"imagesIds": []string{photo, "x"}}, 400, "imagesIds[1]"},
			{map[string]any{"imagesIds": []string{photo, foreign}}, 400, "imagesIds[1]"},
			{map[string]any{"imagesIds": []string{running}}, 400, "imagesIds[0]"},
		} {
			code, out := e.post(key, "/reel/register-reel", tc.body)
			if msg := errorOf(t, out); code != tc.status || !strings.Contains(msg, tc.field) {
				t.Errorf("%v: %d %q, want %d naming %s", tc.body, code, msg, tc.status, tc.field)
			}
		}
	})
}

// validBodies returns, for every register-* route, a body the account may send: its records
// (a product photo with an approved packshot and a DONE photo-shoot image) exist.
func (e *env) validBodies(accountID string) map[string]map[string]any {
	e.t.Helper()
	photo, _ := e.photoFixture(accountID, "Lamp")
	e.packshotFixture(accountID, photo, models.VotingAccepted)
	shoot, _ := e.completedShoot(accountID, status.JobCompleted)
	product := map[string]any{"product": map[string]any{"id": photo}}
	return map[string]map[string]any{
		"/models/register-ideas":        {"preferences": "smiling", "count": 20},
		"/sceneries/register-ideas":     {"preferences": "beach", "count": 20},
		"/packshots/register-ideas":     {"config": product, "count": 50},
		"/image-picker/register-ideas":  {"config": product, "count": 20},
		"/video-picker/register-videos": {"generatedImageId": shoot},
		"/reel/register-reel":           {"imagesIds": []string{photo, shoot}},
	}
}

// Every register-* route answers 402 on a short balance, 503 when no generator runs and 422 when
// no model serves it, each creating nothing.
func TestEveryGenerationRouteRefusesAlike(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		for _, tc := range []struct {
			name   string
			status int
			setup  func(e *env, accountID string)
		}{
			{"short balance", http.StatusPaymentRequired, func(e *env, accountID string) {
				if err := db.Model(&models.Account{}).Where("id = ?", accountID).Update("credit_balance", 2).Error; err != nil {
					t.Fatal(err)
				}
			}},
			{"no generator running", http.StatusServiceUnavailable, func(e *env, _ string) {
				e.mu.Lock()
				defer e.mu.Unlock()
				e.generatorsDown = true
			}},
			{"no model", http.StatusUnprocessableEntity, func(e *env, _ string) {
				catalog, _ := catalog.Load()
				cfg := e.engineConfig
				cfg.Models = providers.MustNewRegistry(catalog, map[string]providers.Provider{})
				e.handler.Engine = engine.New(cfg)
			}},
		} {
			e := newEnv(t, db, 1000)
			account, key := e.newAccount(external.ScopeRegister)
			bodies := e.validBodies(account)
			tc.setup(e, account)
			var before models.Account
			db.Take(&before, "id = ?", account)
			for path, body := range bodies {
				code, out := e.post(key, path, body)
				if code != tc.status || out["error"] == nil {
					t.Errorf("%s: %s = %d %v, want %d", tc.name, path, code, out, tc.status)
				}
			}
			var after models.Account
			db.Take(&after, "id = ?", account)
			var orders int64
			db.Model(&models.Order{}).Where("account_id = ? AND api = ?", account, models.APIExternal).Count(&orders)
			if orders != 1 || after.CreditBalance != before.CreditBalance { // the fixture's completed shoot
				t.Errorf("%s: %d orders, balance %d → %d; want nothing created", tc.name, orders, before.CreditBalance, after.CreditBalance)
			}
		}
	})
}

// The request's correlation ID is on the line that logs the accepted request, as on the order.
func TestGenerationLogsItsCorrelationID(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	e := newEnv(t, db, 0)
	core, logs := observer.New(zap.InfoLevel)
	e.handler.Log = zap.New(core)
	req := httptest.NewRequest(http.MethodPost, external.Base+"/sceneries/register-ideas", strings.NewReader(`{"preferences":"dunes","count":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", e.key)
	req.Header.Set("X-Request-Id", "ticket-4711")
	code, body, _ := e.serve(req)
	o, _, _ := e.accepted(1)(code, body)
	lines := logs.FilterMessage("generation accepted").FilterField(zap.String("correlation_id", o.CorrelationID)).All()
	// One correlation policy in both APIs: the request's ID.
	if o.CorrelationID != "ticket-4711" || len(lines) != 1 || lines[0].ContextMap()["order_id"] != o.ID {
		t.Fatalf("log lines %v, want one naming order %s and correlation %s", logs.All(), o.ID, o.CorrelationID)
	}
}
