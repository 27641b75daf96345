// Command xrdcheck validates Fleetgate's XRDs the way a Kubernetes API server
// validates the CRDs Crossplane makes from them: structural schema, defaults,
// and every x-kubernetes-validations rule compiled by the API server's own
// CEL environment, within its estimated-cost limits. A rule the API server
// would refuse (an unknown function, a cost over the limit) makes Crossplane's
// CRD fail to apply and the XRD never become Established; nothing else in the
// test suite would notice.
//
// Usage: xrdcheck <definition.yaml>...   (exit 1 and one line per error)
package main

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// xrd is the part of an apiextensions.crossplane.io/v2 CompositeResourceDefinition
// that becomes the CRD.
type xrd struct {
	Spec struct {
		Group    string                                        `json:"group"`
		Names    apiextensionsv1.CustomResourceDefinitionNames `json:"names"`
		Scope    apiextensionsv1.ResourceScope                 `json:"scope"`
		Versions []struct {
			Name          string `json:"name"`
			Served        bool   `json:"served"`
			Referenceable bool   `json:"referenceable"`
			Schema        struct {
				OpenAPIV3Schema apiextensionsv1.JSONSchemaProps `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// crd builds the CRD an API server would be asked to accept: the XRD's schema
// under a root with apiVersion, kind and metadata, as Crossplane writes it.
func crd(x xrd) (*apiextensions.CustomResourceDefinition, error) {
	names := x.Spec.Names
	if names.Singular == "" {
		names.Singular = names.Kind
	}
	if names.ListKind == "" {
		names.ListKind = names.Kind + "List"
	}
	scope := x.Spec.Scope
	if scope == "" {
		scope = apiextensionsv1.NamespaceScoped
	}
	out := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: names.Plural + "." + x.Spec.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: x.Spec.Group,
			Names: names,
			Scope: scope,
		},
	}
	for _, v := range x.Spec.Versions {
		schema := v.Schema.OpenAPIV3Schema.DeepCopy()
		if schema.Properties == nil {
			schema.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		}
		schema.Type = "object"
		schema.Properties["apiVersion"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		schema.Properties["kind"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		schema.Properties["metadata"] = apiextensionsv1.JSONSchemaProps{Type: "object"}
		out.Spec.Versions = append(out.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name:         v.Name,
			Served:       v.Served,
			Storage:      v.Referenceable,
			Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema},
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		})
	}
	out.Status.StoredVersions = []string{}
	for _, v := range out.Spec.Versions {
		if v.Storage {
			out.Status.StoredVersions = append(out.Status.StoredVersions, v.Name)
		}
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := apiextensions.AddToScheme(scheme); err != nil {
		return nil, err
	}
	scheme.Default(out)
	internal := &apiextensions.CustomResourceDefinition{}
	if err := scheme.Convert(out, internal, nil); err != nil {
		return nil, err
	}
	return internal, nil
}

func check(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var x xrd
	if err := yaml.Unmarshal(data, &x); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c, err := crd(x)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var problems []string
	for _, e := range validation.ValidateCustomResourceDefinition(context.Background(), c) {
		problems = append(problems, fmt.Sprintf("%s: %s", path, e.Error()))
	}
	return problems, nil
}

func main() {
	failed := false
	for _, path := range os.Args[1:] {
		problems, err := check(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for _, p := range problems {
			fmt.Println(p)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}
