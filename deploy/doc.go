// Package deploy holds the tests of vkllm's deployment files: the
// Dockerfile (its build stages' go build lines), the Helm chart under
// helm/vkllm (rendered with Helm's Go SDK, every manifest decoded
// strictly into the Kubernetes API types, the gateway's resources
// validated against the vendored CRDs in crds/), and the server's
// model-server protocol as the Gateway API Inference Extension's endpoint
// picker scrapes it. It is its own module so that the library's go.mod
// does not carry Helm and the Kubernetes API.
package deploy
