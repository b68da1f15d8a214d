// Package contract is what the workflows and the activities agree on: the names the worker
// registers the activities under, their inputs and results, and the ApplicationError types and
// details they fail with. It is a leaf (the standard library, models/status, models/jobtype and
// internal/providers/errorcat), so the workflows call the activities by name without linking the
// store, gorm or a database driver.
//
// Changing a name, or the JSON shape of a type, changes what running workflows have recorded in
// their histories: the replay tests in workflows/ tell.
package contract
