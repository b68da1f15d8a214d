package worker

import (
	"context"
	"fmt"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/workflows"
)

// MissingSearchAttributes lists the Keyword search attributes of workflows.SearchAttributeNames
// that the namespace has not registered (or has with another type). A workflow that sets one of
// them would stall on every workflow task, so a worker refuses to start without them. err is set
// when the namespace's attributes cannot be listed (for example a key without that permission).
func MissingSearchAttributes(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list the search attributes of namespace %s: %w", namespace, err)
	}
	var missing []string
	for _, name := range workflows.SearchAttributeNames {
		if resp.GetCustomAttributes()[name] != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	return missing, nil
}

// MissingSearchAttributesError explains how to register missing search attributes.
func MissingSearchAttributesError(namespace string, missing []string) error {
	specs := make([]string, len(missing))
	for i, m := range missing {
		specs[i] = m + "=Keyword"
	}
	return fmt.Errorf("namespace %s lacks the Keyword search attributes %s: register them first (deploy/temporal/setup.sh %s, or README \"Running it in production\")",
		namespace, strings.Join(missing, ", "), strings.Join(specs, " "))
}
