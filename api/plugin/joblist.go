package plugin

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
)

// GET /jobs page size bounds (plugin-api-v1.md, Limits).
const (
	DefaultJobsLimit = 50
	MaxJobsLimit     = 200
	maxCursorLength  = 512
)

// JobStatuses are the JobStatus values GET /jobs filters by (docs/job-states.md).
var JobStatuses = []string{models.JobPending, models.JobInProgress, models.JobRetryPending, models.JobCompleted,
	models.JobFailed, models.JobCancelled, models.JobExpired}

// JobsPage is the answer of GET /jobs: the installation's jobs, newest first. NextCursor is null on
// the last page.
type JobsPage struct {
	Jobs       []JobResponse `json:"jobs"`
	NextCursor *string       `json:"next_cursor"`
}

// JobCursor is a position in the (created_at DESC, id DESC) order of GET /jobs: the last job of a
// page. The next page starts right after it.
type JobCursor struct {
	CreatedAt time.Time
	ID        string
}

// JobFilter selects a page of an installation's jobs.
type JobFilter struct {
	Status        string     // "": any
	CreatedAfter  *time.Time // inclusive
	CreatedBefore *time.Time // exclusive
	After         *JobCursor // start after this job
	Limit         int
}

// QueryJobs returns up to f.Limit jobs of the installation matching f, newest first by
// (created_at, id). The order is total and the cursor is a position in it (keyset pagination), so
// a client paging through never sees a job twice or misses one, however many jobs are created
// meanwhile: new jobs sort before every cursor handed out earlier. The query walks the index
// jobs_installation_created (installation_id, created_at, id).
func QueryJobs(db *gorm.DB, installationID string, f JobFilter) ([]models.Job, error) {
	q := db.Where("installation_id = ?", installationID)
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.CreatedAfter != nil {
		q = q.Where("created_at >= ?", f.CreatedAfter.UTC())
	}
	if f.CreatedBefore != nil {
		q = q.Where("created_at < ?", f.CreatedBefore.UTC())
	}
	if f.After != nil {
		at := f.After.CreatedAt.UTC()
		q = q.Where("(created_at < ? OR (created_at = ? AND id < ?))", at, at, f.After.ID)
	}
	var jobs []models.Job
	err := q.Order("created_at DESC, id DESC").Limit(f.Limit).Find(&jobs).Error
	return jobs, err
}

// listJobs answers GET /jobs.
func (h *Handler) listJobs(c *gin.Context) {
	inst := caller(c).Installation
	f, ok := h.jobFilter(c, inst.ID)
	if !ok {
		return
	}
	limit := f.Limit
	f.Limit++ // one more tells whether there is a next page
	db := h.DB.WithContext(c.Request.Context())
	jobs, err := QueryJobs(db, inst.ID, f)
	if err != nil {
		h.internal(c, err)
		return
	}
	page := JobsPage{Jobs: make([]JobResponse, 0, min(len(jobs), limit))}
	if len(jobs) > limit {
		jobs = jobs[:limit]
		last := jobs[limit-1]
		next := h.encodeJobCursor(inst.ID, JobCursor{CreatedAt: last.CreatedAt, ID: last.ID})
		page.NextCursor = &next
	}
	ids := make([]string, len(jobs))
	for i := range jobs {
		ids[i] = jobs[i].ID
	}
	outs, err := models.JobOutputs(db, ids...)
	if err != nil {
		h.internal(c, err)
		return
	}
	for i := range jobs {
		page.Jobs = append(page.Jobs, h.jobResponse(&jobs[i], outs[jobs[i].ID]))
	}
	c.PureJSON(http.StatusOK, page)
}

// jobFilter reads the query parameters of GET /jobs; on a bad one it answers 400 naming it.
func (h *Handler) jobFilter(c *gin.Context, installationID string) (JobFilter, bool) {
	f := JobFilter{Limit: DefaultJobsLimit}
	query := c.Request.URL.Query()
	bad := func(msg string) (JobFilter, bool) {
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, msg)
		return JobFilter{}, false
	}
	for _, name := range []string{"status", "created_after", "created_before", "limit", "cursor"} {
		if len(query[name]) > 1 {
			return bad(name + " may be given only once.")
		}
	}
	if raw, ok := c.GetQuery("status"); ok {
		if !slices.Contains(JobStatuses, raw) {
			return bad("status must be one of: " + strings.Join(JobStatuses, ", ") + ".")
		}
		f.Status = raw
	}
	for _, p := range []struct {
		name string
		dst  **time.Time
	}{{"created_after", &f.CreatedAfter}, {"created_before", &f.CreatedBefore}} {
		raw, ok := c.GetQuery(p.name)
		if !ok {
			continue
		}
		t, ok := parseDateTime(raw)
		if !ok {
			return bad(p.name + " must be an RFC 3339 date-time such as 2026-06-01T12:00:00Z.")
		}
		*p.dst = &t
	}
	if f.CreatedAfter != nil && f.CreatedBefore != nil && !f.CreatedAfter.Before(*f.CreatedBefore) {
		return bad("created_after must be earlier than created_before (created_after is inclusive, created_before exclusive).")
	}
	if raw, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > MaxJobsLimit {
			return bad("limit must be an integer from 1 to " + strconv.Itoa(MaxJobsLimit) + ".")
		}
		f.Limit = n
	}
	if raw, ok := c.GetQuery("cursor"); ok {
		cur, ok := h.decodeJobCursor(installationID, raw)
		if !ok {
			return bad("cursor is not a next_cursor of GET /jobs for this API key's installation; pass it back unchanged, or omit it to start from the newest job.")
		}
		f.After = &cur
	}
	return f, true
}

// parseDateTime reads an RFC 3339 date-time (a "+" of its offset must be percent-encoded as %2B
// in the query string).
func parseDateTime(raw string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// jobCursorToken is the JSON inside a GET /jobs cursor: the position and its MAC.
type jobCursorToken struct {
	CreatedAt string `json:"t"`
	ID        string `json:"id"`
	MAC       string `json:"s"`
}

// encodeJobCursor makes the opaque next_cursor: base64url of the last job's (created_at, id),
// signed for the installation so that a cursor that was altered, or made for another
// installation, is refused.
func (h *Handler) encodeJobCursor(installationID string, cur JobCursor) string {
	at := cur.CreatedAt.UTC().Format(time.RFC3339Nano)
	data, _ := json.Marshal(jobCursorToken{CreatedAt: at, ID: cur.ID, MAC: h.jobCursorMAC(installationID, at, cur.ID)})
	return base64.RawURLEncoding.EncodeToString(data)
}

// decodeJobCursor checks and reads a cursor made by encodeJobCursor for the installation.
func (h *Handler) decodeJobCursor(installationID, raw string) (JobCursor, bool) {
	if raw == "" || len(raw) > maxCursorLength {
		return JobCursor{}, false
	}
	data, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return JobCursor{}, false
	}
	var tok jobCursorToken
	if err := json.Unmarshal(data, &tok); err != nil || tok.MAC == "" {
		return JobCursor{}, false
	}
	if !hmac.Equal([]byte(tok.MAC), []byte(h.jobCursorMAC(installationID, tok.CreatedAt, tok.ID))) {
		return JobCursor{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, tok.CreatedAt)
	if err != nil || !models.IsUUID(tok.ID) {
		return JobCursor{}, false
	}
	return JobCursor{CreatedAt: at.UTC(), ID: tok.ID}, true
}

// jobCursorMAC authenticates a cursor position with the service's URL-signing key (HMAC-SHA256).
// Its pseudo-method CURSOR keeps these MACs apart from every upload and download signature, which
// sign PUT or GET, so neither can be passed off as the other.
func (h *Handler) jobCursorMAC(installationID, createdAt, id string) string {
	signed := h.Signer.URL("CURSOR", "/jobs/"+url.PathEscape(installationID)+"/"+url.PathEscape(createdAt)+"/"+url.PathEscape(id), time.Unix(0, 0))
	u, err := url.Parse(signed)
	if err != nil {
		return ""
	}
	return u.Query().Get("signature")
}
