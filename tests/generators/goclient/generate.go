package goclient

// client.gen.go is oapi-codegen's client of the service's OpenAPI document,
// at its default settings. The generated-clients test regenerates it from
// the document the service serves and fails when it differs.
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -generate types,client -package goclient -o client.gen.go ../../../adapters/http/openapi.yaml
