// Package voting names the verdicts clients give generated images. It is a leaf (no storage), so
// both APIs read and send the values the store keeps.
package voting

// Verdicts of jobs and packshots: the plugin API's accept and reject, the external API's image
// review (pending clears a verdict).
const (
	Pending  = "pending"
	Accepted = "accepted"
	Rejected = "rejected"
)

// Votes of the external API's records (fashion models, sceneries, packshot reviews).
const (
	RecordApproved = "APPROVED"
	RecordRejected = "REJECTED"
)
