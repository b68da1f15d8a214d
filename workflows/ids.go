// Package workflows holds shotflow's deterministic workflow code: OrderWorkflow runs one order and
// starts one JobWorkflow child per job; JobWorkflow owns the attempts, retries and credit
// settlement of one job.
package workflows

import (
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// OrderWorkflowID returns the workflow ID for an order.
func OrderWorkflowID(orderID string) string { return "order/" + orderID }

// JobWorkflowID returns the workflow ID for run number run of a job (run 1 is the first).
func JobWorkflowID(jobID string, run int) string {
	if run <= 1 {
		return "job/" + jobID
	}
	return fmt.Sprintf("job/%s/run-%d", jobID, run)
}

// Search attributes on every shotflow workflow, so operators can filter in the Temporal UI
// (for example: ShotflowInstallationID = "…" AND ShotflowErrorCategory = "RATE_LIMIT").
var (
	SAAccountID      = temporal.NewSearchAttributeKeyKeyword("ShotflowAccountID")
	SAInstallationID = temporal.NewSearchAttributeKeyKeyword("ShotflowInstallationID")
	SAOrderID        = temporal.NewSearchAttributeKeyKeyword("ShotflowOrderID")
	SAJobType        = temporal.NewSearchAttributeKeyKeyword("ShotflowJobType")
	SAJobStatus      = temporal.NewSearchAttributeKeyKeyword("ShotflowJobStatus")
	SAErrorCategory  = temporal.NewSearchAttributeKeyKeyword("ShotflowErrorCategory")
	// SALivemode is false on the workflows of a test key's order and jobs (docs/operations.md,
	// "Test mode"): ShotflowLivemode = false finds them, ShotflowLivemode = true the live ones.
	SALivemode = temporal.NewSearchAttributeKeyBool("ShotflowLivemode")
)

// SearchAttributes lists the search attributes a namespace must have registered, with their
// types (SearchAttributeSpec).
var SearchAttributes = []temporal.SearchAttributeKey{
	SAAccountID, SAInstallationID, SAOrderID, SAJobType, SAJobStatus, SAErrorCategory, SAWaitingOn, SALivemode,
}

// SearchAttributeTypeName is the name the Temporal CLI gives a search attribute type (`temporal
// operator search-attribute create --type`, `temporal server start-dev --search-attribute
// NAME=TYPE`): Keyword, Bool, …
func SearchAttributeTypeName(t enumspb.IndexedValueType) string {
	switch t {
	case enumspb.INDEXED_VALUE_TYPE_KEYWORD:
		return "Keyword"
	case enumspb.INDEXED_VALUE_TYPE_BOOL:
		return "Bool"
	case enumspb.INDEXED_VALUE_TYPE_INT:
		return "Int"
	case enumspb.INDEXED_VALUE_TYPE_DOUBLE:
		return "Double"
	case enumspb.INDEXED_VALUE_TYPE_DATETIME:
		return "Datetime"
	case enumspb.INDEXED_VALUE_TYPE_TEXT:
		return "Text"
	case enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST:
		return "KeywordList"
	}
	return t.String()
}

// SearchAttributeSpec is a search attribute as NAME=TYPE, e.g. ShotflowLivemode=Bool.
func SearchAttributeSpec(k temporal.SearchAttributeKey) string {
	return k.GetName() + "=" + SearchAttributeTypeName(k.GetValueType())
}

// SearchAttributeSpecs are the specs (SearchAttributeSpec) of every search attribute.
func SearchAttributeSpecs() []string {
	out := make([]string, len(SearchAttributes))
	for i, k := range SearchAttributes {
		out[i] = SearchAttributeSpec(k)
	}
	return out
}

// OrderSearchAttributes are the search attributes of an order's workflow at start.
func OrderSearchAttributes(in OrderInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(orderAttributeUpdates(in)...)
}

// jobSearchAttributes are the search attributes of a job's workflow at start.
func jobSearchAttributes(in OrderInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(append(orderAttributeUpdates(in), SAJobStatus.ValueSet("pending"))...)
}

func orderAttributeUpdates(in OrderInput) []temporal.SearchAttributeUpdate {
	updates := []temporal.SearchAttributeUpdate{
		SAAccountID.ValueSet(in.AccountID),
		SAOrderID.ValueSet(in.OrderID),
		SAJobType.ValueSet(in.JobType),
		SALivemode.ValueSet(!in.TestMode),
	}
	if in.InstallationID != "" {
		updates = append(updates, SAInstallationID.ValueSet(in.InstallationID))
	}
	return updates
}
