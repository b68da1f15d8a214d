package engine

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/shotflow/shotflow/models/jobtype"
)

// CloneSubject is one subject of a clone's replacement list. Fields left empty are taken from the
// source order's subject with the same product ref (AIModel, ProductLabel and, for packshot jobs,
// PackshotAssetID and AutoRegisterPackshot); a product that was not in the source needs its AIModel.
type CloneSubject struct {
	ProductRef           string
	ProductLabel         string
	PackshotAssetID      string
	ImagesCount          int
	AIModel              string
	AutoRegisterPackshot *bool // nil: true for packshot jobs, false otherwise
	// TestOutcome is the subject's test_outcome (a test key's only): a subject of the list has
	// its own, never its source's. A clone without a list copies its source's subjects with theirs.
	TestOutcome *TestOutcome
}

// sourceSubject is a subject of the source order, rebuilt from its jobs.
type sourceSubject struct {
	SessionSubject
	order int
}

// CloneSession builds the session of a clone of an order of the installation: its job type,
// session config and SourceOrderID, and its subjects: the source's, rebuilt from its jobs (same
// product refs in order, images_count its number of jobs, ai_model, label and test_outcome) when subjects is
// empty, else subjects completed from the source. It answers KindNotFound for an order of another
// installation and KindInvalid naming subjects[i].ai_model when a new product has none. The caller
// sets the rest of the request (account, API, JobTypes, ...) and commits it like any session.
func (e *Sessions) CloneSession(ctx context.Context, installationID, sourceID string, subjects []CloneSubject) (*SessionRequest, error) {
	source, err := installationOrder(ctx, e.store, installationID, sourceID)
	if err != nil {
		return nil, err
	}
	var cfg SessionConfig
	if len(source.SessionConfig) > 0 {
		if err := json.Unmarshal(source.SessionConfig, &cfg); err != nil {
			return nil, err
		}
	}
	jobs, err := e.store.OrderJobs(ctx, source.ID)
	if err != nil {
		return nil, err
	}
	packshotJobs := source.JobType == jobtype.Packshot
	bySource := map[string]*sourceSubject{}
	for _, j := range jobs {
		s, ok := bySource[j.ProductRef]
		if !ok {
			s = &sourceSubject{order: len(bySource), SessionSubject: SessionSubject{
				ProductRef: j.ProductRef, ProductLabel: j.ProductLabel, AIModel: j.AIModel,
				AutoRegisterPackshot: packshotJobs, TestOutcome: decodedTestOutcome(j.TestOutcome),
			}}
			if packshotJobs && j.InputAssetID != nil {
				s.PackshotAssetID = *j.InputAssetID
			}
			bySource[j.ProductRef] = s
		}
		s.ImagesCount++
	}
	sourceOrderID := source.ID
	req := &SessionRequest{JobType: source.JobType, Config: cfg, SourceOrderID: &sourceOrderID}
	if len(subjects) == 0 {
		req.Subjects = make([]SessionSubject, len(bySource))
		for _, s := range bySource {
			req.Subjects[s.order] = s.SessionSubject
		}
		return req, nil
	}
	for i, cs := range subjects {
		s := SessionSubject{ProductRef: cs.ProductRef, ProductLabel: cs.ProductLabel, PackshotAssetID: cs.PackshotAssetID,
			ImagesCount: cs.ImagesCount, AIModel: cs.AIModel, TestOutcome: cs.TestOutcome}
		src, inSource := bySource[cs.ProductRef]
		if s.AIModel == "" {
			if !inSource {
				return nil, refuse(KindInvalid, "", "subjects["+strconv.Itoa(i)+"].ai_model",
					"is required: product_ref %q is not in the source order", cs.ProductRef)
			}
			s.AIModel = src.AIModel
		}
		if s.ProductLabel == "" && inSource {
			s.ProductLabel = src.ProductLabel
		}
		if packshotJobs {
			if s.PackshotAssetID == "" && inSource {
				s.PackshotAssetID = src.PackshotAssetID
			}
			s.AutoRegisterPackshot = cs.AutoRegisterPackshot == nil || *cs.AutoRegisterPackshot
		} else if cs.AutoRegisterPackshot != nil {
			s.AutoRegisterPackshot = *cs.AutoRegisterPackshot
		}
		req.Subjects = append(req.Subjects, s)
	}
	return req, nil
}
