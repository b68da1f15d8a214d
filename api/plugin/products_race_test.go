package plugin_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// Simultaneous registrations that create the same new product_ref, through POST /packshots and
// POST /images alike, create one product and answer as if they had come one after the other:
// no error, every item registered on that one product, and of two images with the same
// external_ref one created and the other existing.
func TestSimultaneousRegistrationsCreateOneProduct(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, onDatabase(db), withRateLimit(100000))
		const rounds, packshots, images = 4, 6, 6 // 12 simultaneous requests a round
		for round := range rounds {
			ref := fmt.Sprintf("race-%d", round)
			var reqs []*http.Request
			var names []string
			post := func(path string, body any) {
				data, err := json.Marshal(body)
				require.NoError(t, err)
				req := httptest.NewRequest(http.MethodPost, p(path), bytes.NewReader(data))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Api-Key", e.key)
				reqs = append(reqs, req)
			}
			for i := range packshots {
				names = append(names, fmt.Sprintf("Packshot product %d", i))
				post("/packshots", map[string]any{"packshots": []map[string]any{{
					"asset_id": e.readyAsset(e.inst).ID, "product_ref": ref,
					"product_metadata": map[string]any{"display_name": names[len(names)-1]},
				}}})
			}
			for i := range images {
				imageRef := fmt.Sprintf("%s-img-%d", ref, i)
				if i == images-1 {
					imageRef = fmt.Sprintf("%s-img-%d", ref, 0) // the same image twice
				}
				names = append(names, fmt.Sprintf("Image product %d", i))
				post("/images", map[string]any{"images": []map[string]any{{
					"external_ref": imageRef, "product_ref": ref, "asset_id": e.readyAsset(e.inst).ID,
					"product_metadata": map[string]any{"display_name": names[len(names)-1]},
				}}})
			}

			answers := make([]*httptest.ResponseRecorder, len(reqs))
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i, req := range reqs {
				wg.Go(func() {
					<-start
					answers[i] = httptest.NewRecorder()
					e.router.ServeHTTP(answers[i], req)
				})
			}
			close(start)
			wg.Wait()

			productIDs := map[string]bool{}
			statuses := map[string][]string{} // image external_ref → item statuses
			imageIDs := map[string]map[string]bool{}
			for i, rec := range answers {
				require.Equal(t, http.StatusOK, rec.Code, "round %d request %d: %s", round, i, rec.Body.String())
				var out struct {
					Results []struct {
						Status   string
						Packshot *struct {
							ProductID string `json:"product_id"`
						}
						Image *struct {
							ID          string
							ExternalRef string `json:"external_ref"`
							ProductID   string `json:"product_id"`
						}
					}
				}
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
				require.Len(t, out.Results, 1, rec.Body.String())
				res := out.Results[0]
				switch {
				case res.Packshot != nil:
					assert.Equal(t, "created", res.Status, rec.Body.String())
					productIDs[res.Packshot.ProductID] = true
				case res.Image != nil:
					statuses[res.Image.ExternalRef] = append(statuses[res.Image.ExternalRef], res.Status)
					if imageIDs[res.Image.ExternalRef] == nil {
						imageIDs[res.Image.ExternalRef] = map[string]bool{}
					}
					imageIDs[res.Image.ExternalRef][res.Image.ID] = true
					productIDs[res.Image.ProductID] = true
				default:
					t.Fatalf("round %d request %d registered nothing: %s", round, i, rec.Body.String())
				}
			}

			var live []models.Product
			require.NoError(t, db.Where("installation_id = ? AND external_ref = ? AND deleted_at IS NULL", e.inst.ID, ref).Find(&live).Error)
			require.Len(t, live, 1, "round %d: products with the new ref", round)
			assert.Equal(t, map[string]bool{live[0].ID: true}, productIDs, "round %d: every answer names the one product", round)
			assert.Contains(t, names, live[0].DisplayName, "round %d: the product is named by one of its requests", round)

			require.Len(t, statuses, images-1, "round %d: image refs answered", round)
			for imageRef, got := range statuses {
				want := []string{"created"}
				if imageRef == fmt.Sprintf("%s-img-0", ref) {
					want = []string{"created", "existing"}
				}
				slices.Sort(got)
				assert.Equal(t, want, got, "round %d: image %s", round, imageRef)
				assert.Len(t, imageIDs[imageRef], 1, "round %d: image %s answered as one image", round, imageRef)
			}
			assert.EqualValues(t, packshots, e.count(&models.Packshot{}, "product_id = ?", live[0].ID), "round %d: packshots", round)
			assert.EqualValues(t, images-1, e.count(&models.ProductImage{}, "product_id = ? AND deleted_at IS NULL", live[0].ID), "round %d: images", round)
		}
	})
}

// The same registration sent many times at once, through POST /packshots and POST /images alike,
// answers as the same registration sent one after the other would: every request 200, one item
// created and every other existing, all naming the one record; one live row with the external_ref
// and one product with the new product_ref. Before packshots_live_ref (migration 0013), each
// simultaneous POST /packshots found no packshot with the reference and inserted its own.
func TestSimultaneousRepeatsRegisterOneRecord(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, onDatabase(db), withRateLimit(100000))
		const rounds, senders = 3, 20
		for round := range rounds {
			for _, kind := range []string{"packshot", "image"} {
				productRef := fmt.Sprintf("repeat-%s-%d", kind, round)
				ref := productRef + "-ref"
				asset := e.readyAsset(e.inst).ID
				item := map[string]any{"asset_id": asset, "product_ref": productRef, "external_ref": ref,
					"product_metadata": map[string]any{"display_name": "Repeated " + kind}}
				body, err := json.Marshal(map[string]any{kind + "s": []any{item}})
				require.NoError(t, err)

				answers := make([]*httptest.ResponseRecorder, senders)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i := range senders {
					wg.Go(func() {
						req := httptest.NewRequest(http.MethodPost, p("/"+kind+"s"), bytes.NewReader(body))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("X-Api-Key", e.key)
						<-start
						answers[i] = httptest.NewRecorder()
						e.router.ServeHTTP(answers[i], req)
					})
				}
				close(start)
				wg.Wait()

				var statuses []string
				ids, productIDs := map[string]bool{}, map[string]bool{}
				for i, rec := range answers {
					require.Equal(t, http.StatusOK, rec.Code, "%s round %d request %d: %s", kind, round, i, rec.Body.String())
					var out struct {
						Results []struct {
							Status   string
							Packshot *struct {
								ID          string
								ExternalRef string `json:"external_ref"`
								ProductID   string `json:"product_id"`
							}
							Image *struct {
								ID          string
								ExternalRef string `json:"external_ref"`
								ProductID   string `json:"product_id"`
							}
						}
					}
					require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
					require.Len(t, out.Results, 1, rec.Body.String())
					rec := out.Results[0].Packshot
					if kind == "image" {
						rec = out.Results[0].Image
					}
					require.NotNil(t, rec, "%s round %d request %d: %s", kind, round, i, answers[i].Body.String())
					statuses = append(statuses, out.Results[0].Status)
					require.Equal(t, ref, rec.ExternalRef, "%s round %d request %d", kind, round, i)
					ids[rec.ID], productIDs[rec.ProductID] = true, true
				}
				want := []string{"created"}
				for range senders - 1 {
					want = append(want, "existing")
				}
				slices.Sort(statuses)
				assert.Equal(t, want, statuses, "%s round %d: statuses", kind, round)
				assert.Len(t, ids, 1, "%s round %d: every answer names the one %s", kind, round, kind)

				var model any = &models.Packshot{}
				if kind == "image" {
					model = &models.ProductImage{}
				}
				assert.EqualValues(t, 1, e.count(model, "installation_id = ? AND external_ref = ? AND deleted_at IS NULL", e.inst.ID, ref),
					"%s round %d: live rows with the external_ref", kind, round)
				var products []models.Product
				require.NoError(t, db.Where("installation_id = ? AND external_ref = ?", e.inst.ID, productRef).Find(&products).Error)
				require.Len(t, products, 1, "%s round %d: products with the new product_ref", kind, round)
				assert.Equal(t, map[string]bool{products[0].ID: true}, productIDs, "%s round %d: the product every answer names", kind, round)
			}
		}
	})
}
