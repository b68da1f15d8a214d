package worker

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/workflows"
)

// MissingSearchAttributes lists the search attributes of workflows.SearchAttributes that the
// namespace has not registered (or has with another type), as NAME=TYPE
// (workflows.SearchAttributeSpec). A workflow that sets one of them would stall on every
// workflow task, so a worker refuses to start without them. err is set when the namespace's
// attributes cannot be listed (for example a key without that permission).
func MissingSearchAttributes(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list the search attributes of namespace %s: %w", namespace, err)
	}
	var missing []string
	for _, key := range workflows.SearchAttributes {
		if resp.GetCustomAttributes()[key.GetName()] != key.GetValueType() {
			missing = append(missing, workflows.SearchAttributeSpec(key))
		}
	}
	slices.Sort(missing)
	return missing, nil
}

// MissingSearchAttributesError explains how to register missing search attributes, given as
// NAME=TYPE.
func MissingSearchAttributesError(namespace string, missing []string) error {
	return fmt.Errorf("namespace %s lacks the search attributes %s: register them first (deploy/temporal/setup.sh %s, or README \"Running it in production\")",
		namespace, strings.Join(missing, ", "), strings.Join(missing, " "))
}
