package external

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/api/jsonbody"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/models/ids"
	"github.com/shotflow/shotflow/models/refblob"
	"github.com/shotflow/shotflow/models/voting"
)

// Record lists (api/external/openapi.yaml, RecordItem, ImageItem, VideoItem) and the reviews of packshots and
// photo-shoot images.

// statusFilter values of the record lists; "" is StatusFilterAll.
const (
	StatusFilterAll      = "all"
	StatusFilterApproved = "approved"
)

// Packshot review values of POST /packshots/update-packshot.
const (
	PackshotArchive = "ARCHIVE" // status: archive the packshot
)

// RecordItem is an entry of GET /models, /sceneries, /packshots and /image-picker.
type RecordItem struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Thumbnail string    `json:"thumbnail"` // signed image URL once DONE, else ""
	Status    string    `json:"status"`    // DONE, INPROGRESS or FAILED
	Voting    *string   `json:"voting"`    // the list's vocabulary; null when not rated
	CreatedAt time.Time `json:"createdAt"`
	Livemode  bool      `json:"livemode"` // false for a test key's record
}

// VideoItem is an entry of GET /videos.
type VideoItem struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Thumbnail string    `json:"thumbnail"` // signed URL of the first input image once DONE, else ""
	VideoURL  string    `json:"videoUrl"`  // signed URL of the video once DONE, else ""
	Status    string    `json:"status"`
	Voting    *string   `json:"voting"` // APPROVED, REJECTED or null
	CreatedAt time.Time `json:"createdAt"`
	Livemode  bool      `json:"livemode"` // false for a test key's video
}

// registerRecords mounts the record lists and the review routes.
func (h *Handler) registerRecords(add route) {
	get, post, none, body := http.MethodGet, http.MethodPost, inputcheck.NoBody, inputcheck.JSONBody(maxJSONBody)
	add(get, "/models", none, ScopeRead, h.listModels)
	add(get, "/sceneries", none, ScopeRead, h.listSceneries)
	add(get, "/packshots", none, ScopeRead, h.listPackshots)
	add(get, "/image-picker", none, ScopeRead, h.listImages)
	add(get, "/videos", none, ScopeRead, h.listVideos)
	add(post, "/packshots/update-packshot", body, ScopeRegister, h.updatePackshot)
	add(post, "/image-picker/review", body, ScopeRegister, h.reviewImage)
}

func (h *Handler) listModels(c *gin.Context) { h.listReference(c, engine.FashionModels, "models") }

func (h *Handler) listSceneries(c *gin.Context) {
	h.listReference(c, engine.Sceneries, "sceneries")
}

// listReference answers GET /models or /sceneries: a page of the account's own items, not archived.
func (h *Handler) listReference(c *gin.Context, kind engine.ReferenceKind, listKey string) {
	approved, page, ok := h.recordListQuery(c)
	if !ok {
		return
	}
	recs, more, err := h.Engine.Records.ListAccountReferenceItems(c.Request.Context(), key(c).AccountID, kind, approved, page)
	h.answerRecords(c, listKey, recs, more, err)
}

// listPackshots answers GET /packshots: a page of the account's packshots.
func (h *Handler) listPackshots(c *gin.Context) {
	approved, page, ok := h.recordListQuery(c)
	if !ok {
		return
	}
	recs, more, err := h.Engine.Records.ListAccountPackshots(c.Request.Context(), key(c).AccountID, approved, page)
	h.answerRecords(c, "packshots", recs, more, err)
}

// listImages answers GET /image-picker: a page of the account's photo-shoot images, optionally only
// those of one product photo (productId).
func (h *Handler) listImages(c *gin.Context) {
	approved, page, ok := h.recordListQuery(c)
	if !ok {
		return
	}
	photo := c.Query("productId")
	if photo != "" && !ids.IsUUID(photo) {
		h.fail(c, http.StatusBadRequest, "productId must be the id of a product photo (a UUID, as GET /products lists).")
		return
	}
	recs, more, err := h.Engine.Records.ListAccountShoots(c.Request.Context(), key(c).AccountID, approved, ids.Canonical(photo), page)
	h.answerRecords(c, "images", recs, more, err)
}

// listVideos answers GET /videos: a page of the account's videos and reels. Its only query
// parameters are the page's.
func (h *Handler) listVideos(c *gin.Context) {
	page, ok := h.recordPage(c)
	if !ok {
		return
	}
	recs, more, err := h.Engine.Records.ListAccountVideos(c.Request.Context(), key(c).AccountID, page)
	if err != nil {
		h.answer(c, err)
		return
	}
	expires := h.now().Add(h.DownloadTTL)
	items := make([]VideoItem, 0, len(recs))
	for _, r := range recs {
		items = append(items, VideoItem{ID: r.ID, Name: r.Name, Thumbnail: h.recordFileURL(r.Thumbnail, expires),
			VideoURL: h.recordFileURL(r.Video, expires), Status: r.Status, Voting: r.Voting, CreatedAt: r.CreatedAt,
			Livemode: livemode(c)})
	}
	c.PureJSON(http.StatusOK, gin.H{"videos": items, "count": len(items), "has_more": more})
}

// recordListQuery reads the query of a record list with a statusFilter: the filter
// (statusFilter) and the page (recordPage); it answers 400 and reports false for a bad one.
func (h *Handler) recordListQuery(c *gin.Context) (approved bool, page engine.RecordPage, ok bool) {
	if approved, ok = h.statusFilter(c); !ok {
		return false, page, false
	}
	page, ok = h.recordPage(c)
	return approved, page, ok
}

// recordPage reads the paging parameters of a record list, limit and starting_after
// (engine.RecordListQuery); it answers 400 naming the parameter and reports false for a bad one.
func (h *Handler) recordPage(c *gin.Context) (engine.RecordPage, bool) {
	page, err := engine.RecordListQuery(c.Request.URL.Query())
	if err != nil {
		h.answer(c, err)
		return page, false
	}
	return page, true
}

// statusFilter reads the statusFilter query parameter: approved reports true; all, empty or
// absent false; anything else answers 400.
func (h *Handler) statusFilter(c *gin.Context) (approved, ok bool) {
	switch c.Query("statusFilter") {
	case "", StatusFilterAll:
		return false, true
	case StatusFilterApproved:
		return true, true
	}
	h.fail(c, http.StatusBadRequest, "statusFilter must be all (the default) or approved.")
	return false, false
}

// answerRecords answers {<listKey>: [...], count, has_more} with signed thumbnails, or the
// engine's error.
func (h *Handler) answerRecords(c *gin.Context, listKey string, recs []engine.Record, more bool, err error) {
	if err != nil {
		h.answer(c, err)
		return
	}
	expires := h.now().Add(h.DownloadTTL)
	items := make([]RecordItem, 0, len(recs))
	for _, r := range recs {
		items = append(items, RecordItem{ID: r.ID, Name: r.Name, Thumbnail: h.recordFileURL(r.Thumbnail, expires),
			Status: r.Status, Voting: r.Voting, CreatedAt: r.CreatedAt, Livemode: livemode(c)})
	}
	c.PureJSON(http.StatusOK, gin.H{listKey: items, "count": len(items), "has_more": more})
}

// recordFileURL signs the download URL of a record's file; "" when there is none.
func (h *Handler) recordFileURL(f engine.StoredFile, expires time.Time) string {
	switch {
	case f.AssetID != "":
		return h.assetFileURL(f, expires)
	case strings.HasPrefix(f.BlobKey, refblob.Prefix):
		return h.Signer.URL(http.MethodGet, files.RefPath(f.BlobKey), expires)
	}
	return ""
}

// assetFileURL is the download URL of a file that is an asset (its thumbnail when f.Preview): the
// store's when the engine gave its key (FILE_URLS=store), else the API's /files route.
func (h *Handler) assetFileURL(f engine.StoredFile, expires time.Time) string {
	if f.Preview {
		u, _ := h.fileURLs().Thumbnail(f.AssetID, f.StoreKey, expires)
		return u
	}
	u, _ := h.fileURLs().File(fileurl.File{AssetID: f.AssetID, Key: f.StoreKey, ContentType: f.ContentType}, expires)
	return u
}

// updatePackshot answers POST /packshots/update-packshot: {recordId, Voting?, status?}.
func (h *Handler) updatePackshot(c *gin.Context) {
	body, ok := h.reviewBody(c, "recordId", "Voting", "status")
	if !ok {
		return
	}
	id, ok := h.reviewRecordID(c, body)
	if !ok {
		return
	}
	var review engine.PackshotReview
	if raw, sent := body["Voting"]; sent {
		if !h.stringMember(c, "Voting", raw, &review.Voting) {
			return
		}
		if review.Voting != voting.RecordApproved && review.Voting != voting.RecordRejected {
			h.fail(c, http.StatusBadRequest, "Voting must be APPROVED or REJECTED.")
			return
		}
	}
	if raw, sent := body["status"]; sent {
		var status string
		if !h.stringMember(c, "status", raw, &status) {
			return
		}
		if status != PackshotArchive {
			h.fail(c, http.StatusBadRequest, "status must be ARCHIVE.")
			return
		}
		review.Archive = true
	}
	if review.Voting == "" && !review.Archive {
		h.fail(c, http.StatusBadRequest, "Send Voting (APPROVED or REJECTED), status (ARCHIVE), or both.")
		return
	}
	if err := h.Engine.Records.ReviewAccountPackshot(c.Request.Context(), key(c).AccountID, id, review, h.now().UTC()); err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"success": true})
}

// Verdicts of POST /image-picker/review.
var imageVerdicts = []string{voting.Accepted, voting.Rejected, voting.Pending}

// reviewImage answers POST /image-picker/review: {recordId, verdict}; verdict pending clears an
// earlier verdict (voting null again).
func (h *Handler) reviewImage(c *gin.Context) {
	body, ok := h.reviewBody(c, "recordId", "verdict")
	if !ok {
		return
	}
	id, ok := h.reviewRecordID(c, body)
	if !ok {
		return
	}
	var verdict string
	raw, sent := body["verdict"]
	if sent && !h.stringMember(c, "verdict", raw, &verdict) {
		return
	}
	if !slices.Contains(imageVerdicts, verdict) {
		h.fail(c, http.StatusBadRequest, "verdict is required: accepted, rejected or pending (pending clears the verdict).")
		return
	}
	if err := h.Engine.Records.ReviewAccountShoot(c.Request.Context(), key(c).AccountID, id, verdict, h.now().UTC()); err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"success": true})
}

// reviewBody reads a JSON object (jsonbody: exact names, none repeated, valid UTF-8) whose keys
// must all be allowed; it answers 400 for a body that is not such an object or that has another
// key, naming it.
func (h *Handler) reviewBody(c *gin.Context, allowed ...string) (map[string]jsontext.Value, bool) {
	raw, err := io.ReadAll(c.Request.Body) // Input held it to maxJSONBody
	if err != nil {
		h.fail(c, http.StatusBadRequest, "The body could not be read.")
		return nil, false
	}
	body, err := jsonbody.Members(raw)
	if err != nil {
		msg := err.Error()
		if e, ok := err.(*jsonbody.Error); ok && e.Field == "" {
			msg += "; it takes " + strings.Join(allowed, ", ")
		}
		h.fail(c, http.StatusBadRequest, msg+".")
		return nil, false
	}
	var unknown []string
	for k := range body {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		msg := "Unknown field " + strings.Join(unknown, ", ") + "; the body takes only " + strings.Join(allowed, ", ") + "."
		for _, u := range unknown {
			if i := slices.IndexFunc(allowed, func(a string) bool { return strings.EqualFold(a, u) }); i >= 0 {
				msg += " Did you mean " + allowed[i] + "? Field names are case-sensitive."
				break
			}
		}
		h.fail(c, http.StatusBadRequest, msg)
		return nil, false
	}
	return body, true
}

// stringMember decodes the value raw of the body's field named field into a string; it answers
// 400 naming the field for another type.
func (h *Handler) stringMember(c *gin.Context, field string, raw jsontext.Value, dst *string) bool {
	if err := jsonbody.DecodeValue(field, raw, dst); err != nil {
		h.fail(c, http.StatusBadRequest, err.Error()+".")
		return false
	}
	return true
}

// reviewRecordID reads the required recordId of a review body: 400 unless a UUID string (in
// either case; it returns it as the store keeps it).
func (h *Handler) reviewRecordID(c *gin.Context, body map[string]jsontext.Value) (string, bool) {
	var id string
	raw, sent := body["recordId"]
	if sent && !h.stringMember(c, "recordId", raw, &id) {
		return "", false
	}
	if id == "" {
		h.fail(c, http.StatusBadRequest, "recordId is required (a string).")
		return "", false
	}
	if !ids.IsUUID(id) {
		h.fail(c, http.StatusBadRequest, "recordId must be a UUID.")
		return "", false
	}
	return ids.Canonical(id), true
}
