module github.com/ambitkernel/ambit/kernel

go 1.26.0

require (
	github.com/ambitkernel/ambit/proto v0.0.0
	github.com/ambitkernel/ambit/sdk v0.0.0
	github.com/google/go-cmp v0.7.0
	google.golang.org/protobuf v1.36.12
	pgregory.net/rapid v1.3.0
	sigs.k8s.io/yaml v1.6.0
)

require go.yaml.in/yaml/v2 v2.4.2 // indirect

replace (
	github.com/ambitkernel/ambit/proto => ../proto
	github.com/ambitkernel/ambit/sdk => ../sdk
)
